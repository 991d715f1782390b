package approval

import "testing"

// TestUnwrapBash: only Codex's exact wrapper is unwrapped; every near miss
// keeps the whole line as the command.
func TestUnwrapLoginBash(t *testing.T) {
	for _, c := range []struct{ line, script, wrapper string }{
		{`/bin/bash -lc 'npm test'`, "npm test", "/bin/bash -lc"},
		{`/usr/bin/bash -lc 'npm test'`, "npm test", "/usr/bin/bash -lc"},
		{`/bin/bash -lc 'echo approved >> out.txt; env > env.txt'`, "echo approved >> out.txt; env > env.txt", "/bin/bash -lc"},
		// shlex's quoting of a quote: single-quoted runs, the quote in double quotes.
		{`/bin/bash -lc 'echo '"'"'hi'"'"`, "echo 'hi'", "/bin/bash -lc"},
		{"/bin/bash -lc 'printf \"a\\nb\"\n'", "printf \"a\\nb\"\n", "/bin/bash -lc"},
		{`/bin/bash -lc "npm test"`, "npm test", "/bin/bash -lc"},
	} {
		s, w, ok := UnwrapLoginBash(c.line)
		if !ok || s != c.script || w != c.wrapper {
			t.Errorf("%q: %q %q %v, want %q %q", c.line, s, w, ok, c.script, c.wrapper)
		}
	}
	for _, line := range []string{
		`npm test`,
		`/bin/bash -c 'npm test'`,                // -c, not -lc
		`/bin/bash -l -c 'npm test'`,             // split flags
		`/bin/bash -lc 'npm test' extra`,         // an extra argument ($0)
		`/bin/bash --norc -lc 'npm test'`,        // an extra option
		`/bin/bash -lc "npm $TEST"`,              // an expansion the outer shell makes
		"/bin/bash -lc \"npm `id`\"",             // a command substitution
		`/bin/bash -lc "npm \"test\""`,           // escapes read by the outer shell
		`/bin/bash -lc $'npm\ttest'`,             // $'…' reads escapes
		`/bin/bash -lc npm`,                      // an unquoted word
		`/bin/bash -lc 'npm test'npm`,            // an unquoted run
		`/bin/bash -lc 'npm test'; rm -rf /`,     // a second command after it
		`/bin/bash -lc 'npm test' && rm -rf /`,   // a chain
		`/bin/bash -lc 'npm test' | sh`,          // a pipe
		`/bin/bash -lc 'npm test' > /etc/passwd`, // a redirection
		`X=1 /bin/bash -lc 'npm test'`,           // an assignment
		`/bin/bash -lc 'npm test' # comment`,     // a comment
		`/bin/bash -lc 'npm test' &`,             // in the background
		`! /bin/bash -lc 'npm test'`,             // negated
		`/bin/bash  -lc 'npm test'`,              // not Codex's spacing
		" /bin/bash -lc 'npm test'",              // leading space
		"/bin/bash -lc 'npm test'\n",             // trailing newline
		"/bin/bash \\\n-lc 'npm test'",           // a line continuation
		`/bin/sh -lc 'npm test'`,                 // another shell
		`bash -lc 'npm test'`,                    // looked up on PATH
		`/tmp/bash -lc 'npm test'`,               // another program named bash
		`/bin/bash -lc ''`,                       // nothing to run
		`/bin/bash -lc '   '`,                    // nothing to run
		`/bin/bash -lc 'npm test`,                // unterminated
		`/bin/ba\sh -lc 'npm test'`,              // an escape in the shell word
		`/bin/bash -lc 'a' 'b'`,                  // two script words
	} {
		if s, w, ok := UnwrapLoginBash(line); ok {
			t.Errorf("%q unwrapped to %q %q", line, s, w)
		}
	}
}
