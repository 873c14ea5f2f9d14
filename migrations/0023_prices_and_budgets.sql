-- Prices and budgets set on the Settings page (issue 34).
-- A price per connection and model, in dollars per million tokens; without a row the
-- built-in defaults apply (hosted vendors' list prices; local servers cost 0).
CREATE TABLE model_prices (
    connection            TEXT NOT NULL,
    model                 TEXT NOT NULL,
    input_per_mtok        REAL NOT NULL CHECK (input_per_mtok >= 0),
    cached_input_per_mtok REAL NOT NULL CHECK (cached_input_per_mtok >= 0),
    output_per_mtok       REAL NOT NULL CHECK (output_per_mtok >= 0),
    updated_at            INTEGER NOT NULL,
    PRIMARY KEY (connection, model)
) STRICT;

-- Budgets set on the Settings page; they take the place of config.toml's for their scope
-- (`all`, or `agent:<id>`). A NULL limit is no limit.
CREATE TABLE budgets (
    scope             TEXT PRIMARY KEY,
    tokens_per_day    INTEGER CHECK (tokens_per_day >= 0),
    tokens_per_month  INTEGER CHECK (tokens_per_month >= 0),
    usd_per_day       REAL CHECK (usd_per_day >= 0),
    usd_per_month     REAL CHECK (usd_per_month >= 0),
    notify_at_percent INTEGER CHECK (notify_at_percent BETWEEN 1 AND 100),
    updated_at        INTEGER NOT NULL
) STRICT;
