-- A model's profile settings as the person set them on the Settings page (issue 32): keyed by
-- `provider/model`, the JSON of the profile override (what config.toml's [model_profiles] says,
-- on top of which these apply). One row per model; deleting it returns to the chosen profile.
CREATE TABLE model_profile_overrides (
    model_key TEXT PRIMARY KEY NOT NULL,
    settings TEXT NOT NULL CHECK (json_valid(settings)),
    updated_at INTEGER NOT NULL
);
