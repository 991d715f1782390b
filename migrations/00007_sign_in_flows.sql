-- +goose Up
-- Unfinished sign-ins: the OpenID Connect state (stored as its SHA-256),
-- nonce, PKCE verifier and the page to return to, bound to the browser that
-- started them by the SHA-256 of a short-lived cookie. A row is used up by
-- its callback and is worthless after expires_at; the session sweep removes
-- what is left. No server session exists until someone has signed in.
CREATE TABLE oidc_flows (
    state_hash   BYTEA PRIMARY KEY,
    browser_hash BYTEA NOT NULL,
    nonce        TEXT NOT NULL,
    verifier     TEXT NOT NULL,
    next_path    TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX oidc_flows_expires_idx ON oidc_flows (expires_at);

-- The admin role is decided on every request from COUNTERSIGN_ADMIN_EMAILS
-- and the stored verified email; a copy taken at sign-in would outlive a
-- removal from the list.
ALTER TABLE users DROP COLUMN is_admin;

-- +goose Down
ALTER TABLE users ADD COLUMN is_admin BOOLEAN NOT NULL DEFAULT false;
DROP TABLE oidc_flows;
