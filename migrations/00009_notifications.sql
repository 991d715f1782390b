-- +goose Up
-- Notifications: a durable outbox written in the transaction of each
-- change, so that nothing is announced for work that was rolled back, and
-- every instance can deliver what any instance committed.

-- One row per event (an item requested, decided, expired or cancelled, a
-- pre-approval lapsed, a policy changed). Never argument contents.
CREATE TABLE notification_events (
    id            BIGSERIAL PRIMARY KEY,
    kind          TEXT NOT NULL,
    approval_id   UUID REFERENCES approvals (id),
    owner_subject TEXT NOT NULL DEFAULT '',
    connector     TEXT NOT NULL DEFAULT '',
    tool          TEXT NOT NULL DEFAULT '',
    playbook_id   TEXT NOT NULL DEFAULT '',
    detail        JSONB NOT NULL DEFAULT '{}',
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- set once the pipeline has planned the event's deliveries
    planned_at    TIMESTAMPTZ
);
CREATE INDEX notification_events_unplanned_idx ON notification_events (id) WHERE planned_at IS NULL;

-- Webhook endpoints, managed by admins. The secret is needed to sign, so it
-- is kept; the admin page only ever shows its last characters.
CREATE TABLE webhooks (
    id         BIGSERIAL PRIMARY KEY,
    url        TEXT NOT NULL,
    secret     TEXT NOT NULL,
    events     TEXT[] NOT NULL,
    created_by BIGINT REFERENCES users (id),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    deleted_at TIMESTAMPTZ
);

-- One row per (event, channel, target): a mail to a person, a POST to a
-- webhook, later a push to a device. Claimed with FOR UPDATE SKIP LOCKED
-- and a lease, so that each is sent by one instance.
CREATE TABLE notification_deliveries (
    id              BIGSERIAL PRIMARY KEY,
    event_id        BIGINT NOT NULL REFERENCES notification_events (id),
    channel         TEXT NOT NULL,
    target          TEXT NOT NULL,
    state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    lease_until     TIMESTAMPTZ,
    created_at      TIMESTAMPTZ NOT NULL,
    done_at         TIMESTAMPTZ,
    UNIQUE (event_id, channel, target)
);
CREATE INDEX notification_deliveries_due_idx ON notification_deliveries (channel, next_attempt_at) WHERE state = 'pending';

-- Every attempt and how it went, shown on the webhooks page.
CREATE TABLE notification_attempts (
    id          BIGSERIAL PRIMARY KEY,
    delivery_id BIGINT NOT NULL REFERENCES notification_deliveries (id),
    at          TIMESTAMPTZ NOT NULL,
    status_code INTEGER NOT NULL DEFAULT 0,
    outcome     TEXT NOT NULL
);
CREATE INDEX notification_attempts_delivery_idx ON notification_attempts (delivery_id, id);

-- A person's notification settings. No row: the defaults.
CREATE TABLE notification_settings (
    user_subject  TEXT PRIMARY KEY,
    email_enabled BOOLEAN NOT NULL DEFAULT true,
    -- when the last mail went out, so that a burst is grouped into one
    last_mail_at  TIMESTAMPTZ
);

-- +goose Down
DROP TABLE notification_settings;
DROP TABLE notification_attempts;
DROP TABLE notification_deliveries;
DROP TABLE webhooks;
DROP TABLE notification_events;
