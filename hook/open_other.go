//go:build !unix

package hook

import "os"

// openNoWait opens p for reading; the caller has seen a regular file there.
func openNoWait(p string) (*os.File, error) {
	return os.Open(p)
}
