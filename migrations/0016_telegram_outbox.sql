-- The Telegram channel's outbox (issue 33): every message the channel owes a chat — a piece of a
-- streamed answer, a question and its buttons, a notice, a notification, a reply to a command.
-- A row is one message as the chat should show it now (`text`, `keyboard`) beside what Telegram
-- last accepted for it (`message_id`, `sent_text`, `sent_keyboard`). A worker per chat sends what
-- differs, oldest row first, and retries with backoff until Telegram accepts it; a later change
-- of a row supersedes one never sent (only the newest text goes). A restart resumes it.
CREATE TABLE telegram_outbox (
    id            INTEGER PRIMARY KEY,
    chat_id       INTEGER NOT NULL,
    -- The channel's name for the message within its chat (`answer:<uuid>:<piece>`,
    -- `question:<pending id>`, …): a later write of the same slot changes the same message.
    slot          TEXT NOT NULL,
    -- Telegram HTML, and the inline keyboard as the Bot API's JSON (NULL: none).
    text          TEXT NOT NULL,
    keyboard      TEXT,
    -- Shown instead, without buttons, when Telegram refuses the keyboard.
    fallback_text TEXT,
    message_id    INTEGER,
    sent_text     TEXT,
    sent_keyboard TEXT,
    -- `pending` while Telegram does not show what the row says; `failed` when Telegram refused
    -- it for good (the text cannot change that: a chat that is gone, a bot that is blocked).
    state         TEXT NOT NULL CHECK (state IN ('pending', 'done', 'failed')),
    attempts      INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    UNIQUE (chat_id, slot)
) STRICT;

CREATE INDEX telegram_outbox_pending ON telegram_outbox (chat_id, id) WHERE state = 'pending';
CREATE INDEX telegram_outbox_by_time ON telegram_outbox (updated_at) WHERE state <> 'pending';
