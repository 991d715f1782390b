// Package migrations holds Countersign's SQL schema as numbered goose
// migrations, embedded into the binary.
package migrations

import "embed"

// FS contains every migration file, applied in file-name order.
//
//go:embed *.sql
var FS embed.FS
