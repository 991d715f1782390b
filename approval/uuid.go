package approval

import "regexp"

// canonicalUUID is how the server writes every id it issues: lower-case
// hex in the 8-4-4-4-12 hyphenated form.
var canonicalUUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// CanonicalUUID reports whether s is a UUID exactly as the server issues
// it. Postgres would also read upper case, braces and the hyphen-less form
// as the same UUID; the API does not, so that one item has one name.
func CanonicalUUID(s string) bool { return canonicalUUID.MatchString(s) }
