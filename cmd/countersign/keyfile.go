package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// Where runtime-side commands (hook, mcp) find their API key. The key is
// never taken from a command line that a tool prints: Claude Code copies a
// failed hook's whole command line into the tool result the model reads.
const (
	envAPIKey     = "COUNTERSIGN_API_KEY"
	envAPIKeyFile = "COUNTERSIGN_API_KEY_FILE"
)

// maxKeyFile bounds what is read from a key file: a key is ~50 bytes.
const maxKeyFile = 4 << 10

// runtimeKey is the API key a runtime-side command uses: --api-key (one-off
// use), else --api-key-file, else $COUNTERSIGN_API_KEY, else
// $COUNTERSIGN_API_KEY_FILE. "" with no error means none was given. No
// error it returns contains the key or the file's contents.
func runtimeKey(flagKey, flagFile string) (string, error) {
	switch {
	case flagKey != "":
		return flagKey, nil
	case flagFile != "":
		return readKeyFile(flagFile)
	case os.Getenv(envAPIKey) != "":
		return os.Getenv(envAPIKey), nil
	case os.Getenv(envAPIKeyFile) != "":
		return readKeyFile(os.Getenv(envAPIKeyFile))
	}
	return "", nil
}

// readKeyFile reads a key kept in a file of its own. A file that group or
// others may read is refused: the key would be one `cat` away for every
// account on the machine.
func readKeyFile(path string) (string, error) {
	// Looked at before it is opened: opening a FIFO would wait forever.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return "", fmt.Errorf("the API key file %s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot open the API key file %s: %w", path, errors.Unwrap(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("cannot read the API key file %s: %w", path, errors.Unwrap(err))
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("the API key file %s is not a regular file", path)
	}
	// Windows has no such mode bits; its ACLs are not checked here.
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return "", fmt.Errorf("the API key file %s can be read by other users (mode %04o); run: chmod 600 %s", path, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return "", fmt.Errorf("cannot read the API key file %s", path)
	}
	if len(b) > maxKeyFile {
		return "", fmt.Errorf("the API key file %s is larger than a key", path)
	}
	key := strings.TrimSpace(string(b))
	if key == "" || strings.ContainsFunc(key, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", fmt.Errorf("the API key file %s does not hold one key on one line", path)
	}
	return key, nil
}
