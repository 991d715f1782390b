-- +goose Up
-- Web Push: the server's VAPID key pair and each person's subscribed
-- browsers and phones.

-- The VAPID key pair, generated once for the whole installation (every
-- instance signs with the same key, or subscriptions made through one
-- instance would be refused when another sends). At most one row: the
-- primary key only admits true, so two instances starting at once cannot
-- both insert.
CREATE TABLE vapid_keys (
    id          BOOLEAN PRIMARY KEY DEFAULT true CHECK (id),
    public_key  TEXT NOT NULL,
    private_key TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One row per browser or phone that receives pushes. The endpoint is the
-- push service's URL for that browser: one browser, one row, belonging to
-- whoever turned push on there last.
CREATE TABLE push_subscriptions (
    id              BIGSERIAL PRIMARY KEY,
    user_subject    TEXT NOT NULL,
    endpoint        TEXT NOT NULL UNIQUE,
    p256dh          TEXT NOT NULL,
    auth            TEXT NOT NULL,
    device_name     TEXT NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_success_at TIMESTAMPTZ
);
CREATE INDEX push_subscriptions_user_idx ON push_subscriptions (user_subject, id);

-- +goose Down
DROP TABLE push_subscriptions;
DROP TABLE vapid_keys;
