//go:build unix

package hook

import (
	"os"
	"syscall"
)

// openNoWait opens p for reading without following a final link and
// without waiting: a FIFO or a device put in its place opens at once (and
// is then refused), never blocks the hook.
func openNoWait(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
}
