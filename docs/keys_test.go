package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// keyInSnippet finds a runtime key, or a place for one, written into a
// configuration: a key-shaped "cs_…" string, or COUNTERSIGN_API_KEY (not
// _FILE) given a literal value in JSON, TOML, YAML, an env list or a
// command line. A value taken at launch from elsewhere — "$(cat FILE)",
// "${VAR}", "${input:…}" — is not a key in the file.
var keyInSnippet = []*regexp.Regexp{
	regexp.MustCompile(`\bcs_[A-Za-z0-9_.…]+`),
	regexp.MustCompile(`"COUNTERSIGN_API_KEY"\s*:\s*"[^$"]`),
	regexp.MustCompile(`\bCOUNTERSIGN_API_KEY\s*[=:]\s*"?[^$"\s{(]`),
	regexp.MustCompile(`--api-key[ =]+["']?cs_`),
}

// snippets are a page's fenced code blocks and inline code.
func snippets(page string) []string {
	var out []string
	parts := strings.Split(page, "```")
	for i, p := range parts {
		if i%2 == 1 {
			out = append(out, p)
			continue
		}
		for _, m := range regexp.MustCompile("`[^`\n]+`").FindAllString(p, -1) {
			out = append(out, m)
		}
	}
	return out
}

// No documented configuration puts a key into a file the model can read
// (.mcp.json, settings, config.toml, an MCP client's env, a command line an
// agent copies into the transcript): every snippet names a key file or
// leaves the key to the launcher's environment.
func TestNoKeyInDocumentedConfiguration(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join("..", "README.md"))
	found := 0
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snippets(string(b)) {
			found++
			for _, re := range keyInSnippet {
				if m := re.FindString(s); m != "" {
					t.Errorf("%s: a key in a documented snippet (%q):\n%s", p, m, s)
				}
			}
		}
	}
	if found < 50 {
		t.Fatalf("only %d snippets found", found)
	}
}

// The patterns catch what the documented set-ups once carried.
func TestKeyPatternsCatchTheOldSnippets(t *testing.T) {
	for _, s := range []string{
		`"COUNTERSIGN_API_KEY": "cs_…",`,
		`-e COUNTERSIGN_API_KEY=cs_… -e COUNTERSIGN_USER=maya`,
		`env = { COUNTERSIGN_API_KEY = "cs_…" }`,
		`KEY=cs_...`,
		`export COUNTERSIGN_API_KEY=abc123`,
		`countersign hook --api-key cs_live_0a1b2c`,
	} {
		hit := false
		for _, re := range keyInSnippet {
			hit = hit || re.MatchString(s)
		}
		if !hit {
			t.Errorf("not caught: %s", s)
		}
	}
	for _, s := range []string{
		`"COUNTERSIGN_API_KEY_FILE": "/Users/maya/.config/countersign/key"`,
		`"COUNTERSIGN_API_KEY": "${input:countersign-key}"`,
		`export COUNTERSIGN_API_KEY="$(cat /home/maya/.config/countersign/key)"`,
		"`COUNTERSIGN_API_KEY` in the environment",
	} {
		for _, re := range keyInSnippet {
			if re.MatchString(s) {
				t.Errorf("caught, wrongly: %s", s)
			}
		}
	}
}
