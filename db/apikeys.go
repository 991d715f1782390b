package db

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/approval"
	"github.com/jackc/pgx/v5"
)

// apiKeyPrefix starts every runtime key, so that a leaked key is easy to
// recognise in logs and by secret scanners.
const apiKeyPrefix = "cs_"

// APIKey is a runtime API key as stored: never the key itself.
type APIKey struct {
	ID         int64      `db:"id"`
	Name       string     `db:"name"`
	Prefix     string     `db:"key_prefix"`
	CreatedBy  *int64     `db:"created_by"`
	Creator    string     `db:"creator"`
	CreatedAt  time.Time  `db:"created_at"`
	LastUsedAt *time.Time `db:"last_used_at"`
	RevokedAt  *time.Time `db:"revoked_at"`
	// AllowFirstTimeUsers lets the key's checks leave items waiting for
	// people who have never signed in (read by ListAPIKeys only; the
	// check reads it where it needs it, see mayAsk).
	AllowFirstTimeUsers bool `db:"allow_first_time_users"`
	// Team is the team a service agent's key belongs to (nil: a person's
	// key). Its checks may omit user; their items go to the team.
	Team *string `db:"team"`
}

// TeamItem reports whether a check with key for user makes an item that
// belongs to the key's team rather than to a person.
func (k APIKey) TeamItem(user string) bool { return k.Team != nil && user == "" }

// Actor is k as an audit actor.
func (k APIKey) Actor() approval.Actor {
	return approval.Actor{Kind: approval.ActorAPIKey, ID: strconv.FormatInt(k.ID, 10), Name: k.Name}
}

func hashAPIKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// CreateAPIKey makes a new key named name, stores its hash and returns the
// key, which is shown once and never again. creator is nil for keys made on
// the command line.
func (d *DB) CreateAPIKey(ctx context.Context, name string, creator *User) (string, APIKey, error) {
	return d.CreateAPIKeyWith(ctx, name, creator, APIKeyOptions{})
}

// APIKeyOptions are a new key's settings.
type APIKeyOptions struct {
	// AllowFirstTimeUsers lets the key's checks leave items waiting for
	// people who have never signed in (see mayAsk).
	AllowFirstTimeUsers bool
	// Team makes the key a service agent's: its checks may omit user, and
	// their items go to the team ("": a person's key).
	Team string
	// Replace revokes, in the same transaction and audited, a standing key
	// of the same owner and name first: for keys a tool makes anew at each
	// start (countersign dev, bench), since names are unique per owner.
	Replace bool
}

// CreateAPIKeyWith is CreateAPIKey with settings, recorded in the same
// audit line.
func (d *DB) CreateAPIKeyWith(ctx context.Context, name string, creator *User, opt APIKeyOptions) (string, APIKey, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return "", APIKey{}, approval.Errorf(approval.KindUnprocessable, approval.CodeInvalidRequest,
			"A key needs a name of 1 to 100 characters.")
	}
	// The name is shown in the audit's actor cell and the keys list: a
	// line break there could pass for another line.
	if strings.ContainsFunc(name, lineOrControl) {
		return "", APIKey{}, approval.Errorf(approval.KindUnprocessable, approval.CodeInvalidRequest,
			"A key name cannot hold line breaks or other control characters.")
	}
	if opt.Team != "" {
		if err := approval.ValidTeamName(opt.Team); err != nil {
			return "", APIKey{}, err
		}
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", APIKey{}, err
	}
	key := apiKeyPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	actor := approval.Actor{Kind: approval.ActorSystem, ID: "cli", Name: "command line"}
	var createdBy *int64
	if creator != nil {
		createdBy, actor = &creator.ID, creator.Actor()
	}
	var k APIKey
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		if opt.Replace {
			if err := revokeSameName(ctx, tx, name, createdBy, opt.Team, actor); err != nil {
				return err
			}
		}
		err := tx.QueryRow(ctx, `
			INSERT INTO api_keys (name, key_hash, key_prefix, created_by, allow_first_time_users, team) VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''))
			RETURNING id, created_at, team`, name, hashAPIKey(key), key[:len(apiKeyPrefix)+6], createdBy, opt.AllowFirstTimeUsers, opt.Team,
		).Scan(&k.ID, &k.CreatedAt, &k.Team)
		if err != nil {
			return err
		}
		k.Name, k.Prefix, k.CreatedBy, k.AllowFirstTimeUsers = name, key[:len(apiKeyPrefix)+6], createdBy, opt.AllowFirstTimeUsers
		detail := map[string]any{"key_id": k.ID, "key_name": name}
		if opt.AllowFirstTimeUsers {
			detail["allow_first_time_users"] = true
		}
		if opt.Team != "" {
			detail["team"] = opt.Team
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: approval.ActionAPIKeyCreated, Detail: detail})
	})
	if isConstraintViolation(err, "api_keys_name_per_owner") {
		// Names are unique per owner among standing keys (migration
		// 00031); a revoked key's name may be given again.
		whose := "you"
		switch {
		case opt.Team != "":
			whose = "team " + strconv.Quote(opt.Team)
		case creator == nil:
			whose = "the command line"
		}
		return "", APIKey{}, approval.Errorf(approval.KindUnprocessable, approval.CodeInvalidRequest,
			"A key named %q already stands for %s. Choose another name, or revoke that key first.", name, whose)
	}
	if err != nil {
		return "", APIKey{}, translate("create api key", err)
	}
	return key, k, nil
}

// apiKeyOwnerSQL is a key's owner, whose key names are unique
// (migration 00031's api_keys_name_per_owner): its team, else the person
// who made it, else the command line.
const apiKeyOwnerSQL = `COALESCE('team:' || team, 'person:' || created_by::text, 'cli')`

// revokeSameName revokes the standing key named name of the owner a new
// key of createdBy and team would have, with its audit line.
func revokeSameName(ctx context.Context, tx pgx.Tx, name string, createdBy *int64, team string, actor approval.Actor) error {
	var id int64
	err := tx.QueryRow(ctx, `UPDATE api_keys SET revoked_at = now() WHERE revoked_at IS NULL AND name = $1
		AND `+apiKeyOwnerSQL+` = COALESCE('team:' || NULLIF($3, ''), 'person:' || $2::bigint::text, 'cli') RETURNING id`,
		name, createdBy, team).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	return RecordAudit(ctx, tx, approval.AuditEvent{Actor: actor, Action: approval.ActionAPIKeyRevoked,
		Detail: map[string]any{"key_id": id, "key_name": name, "reason": "replaced by a new key of the same name"}})
}

// ListAPIKeys returns every key, newest first.
func (d *DB) ListAPIKeys(ctx context.Context) ([]APIKey, error) {
	rows, err := d.Pool.Query(ctx, `
		SELECT k.id, k.name, k.key_prefix, k.created_by, COALESCE(NULLIF(u.name, ''), u.email, 'command line') AS creator,
			k.created_at, k.last_used_at, k.revoked_at, k.allow_first_time_users, k.team
		FROM api_keys k LEFT JOIN users u ON u.id = k.created_by
		ORDER BY k.revoked_at IS NOT NULL, k.id DESC`)
	if err != nil {
		return nil, translate("list api keys", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByName[APIKey])
	return keys, translate("list api keys", err)
}

// RevokeAPIKey revokes the key with id; revoking twice is a no-op that
// writes no second line.
func (d *DB) RevokeAPIKey(ctx context.Context, id int64, by User) error {
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		var name string
		err := tx.QueryRow(ctx, `UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL RETURNING name`, id).Scan(&name)
		if err != nil {
			return err
		}
		return RecordAudit(ctx, tx, approval.AuditEvent{
			Actor: by.Actor(), Action: approval.ActionAPIKeyRevoked,
			Detail: map[string]any{"key_id": id, "key_name": name},
		})
	})
	return translate("revoke api key", err)
}

// errUnauthorized is the answer to a missing, unknown or revoked key.
func errUnauthorized() error {
	return approval.Errorf(approval.KindUnauthorized, approval.CodeUnauthorized,
		"A valid API key is required: send Authorization: Bearer <key>.")
}

// apiKeyShaped says whether key could be a key at all; anything else is
// refused without a query.
func apiKeyShaped(key string) bool {
	return strings.HasPrefix(key, apiKeyPrefix) && len(key) <= 200
}

// apiKeyAuthSQL reads the live key with hash $1.
const apiKeyAuthSQL = `SELECT id, name, key_prefix, created_at, last_used_at, team FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`

func scanAPIKey(row pgx.Row) (APIKey, error) {
	var k APIKey
	err := row.Scan(&k.ID, &k.Name, &k.Prefix, &k.CreatedAt, &k.LastUsedAt, &k.Team)
	return k, err
}

// noteAPIKeyUse writes the key's last use, at most once a minute.
func (d *DB) noteAPIKeyUse(ctx context.Context, k APIKey) error {
	if k.LastUsedAt != nil && time.Since(*k.LastUsedAt) <= time.Minute {
		return nil
	}
	_, err := d.Pool.Exec(ctx, `UPDATE api_keys SET last_used_at = now() WHERE id = $1`, k.ID)
	return err
}

// AuthenticateAPIKey returns the live key matching key, and notes its use at
// most once a minute.
func (d *DB) AuthenticateAPIKey(ctx context.Context, key string) (APIKey, error) {
	if !apiKeyShaped(key) {
		return APIKey{}, errUnauthorized()
	}
	// One read per request; the write happens at most once a minute.
	k, err := scanAPIKey(d.Pool.QueryRow(ctx, apiKeyAuthSQL, hashAPIKey(key)))
	if err == pgx.ErrNoRows {
		return APIKey{}, errUnauthorized()
	}
	if err == nil {
		err = d.noteAPIKeyUse(ctx, k)
	}
	return k, translate("authenticate api key", err)
}
