// Package typescript tests the TypeScript framework adapters' rules against
// the server's: what the package computes on the runtime's side must be what
// Countersign computes, or a claim binds other arguments than were shown.
package typescript

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approval"
)

// TestArgumentsDigestMatchesServer feeds the same hostile argument texts to
// the package's argumentsDigest (dist/digest.js), to the example client's
// (examples/typescript/gate.mjs) and to approval.Digest, the server's, and
// requires one digest for each text: numbers kept as written (1e21, 1.0,
// -0, big integers), escapes in their shortest form, keys sorted by UTF-16
// code units, nested arrays, and the texts that are not one valid object
// (duplicate names, lone surrogates, too deep, too large, not JSON) digested
// as sent.
func TestArgumentsDigestMatchesServer(t *testing.T) {
	node := needNode(t)
	texts := hostileArguments()
	script := `
import { argumentsDigest as pkg } from "./dist/digest.js";
import { argumentsDigest as example } from "../../examples/typescript/gate.mjs";
process.stdin.setEncoding("utf8");
let input = "";
for await (const chunk of process.stdin) input += chunk;
const texts = JSON.parse(input);
process.stdout.write(JSON.stringify({ pkg: texts.map(pkg), example: texts.map(example) }));
`
	in, err := json.Marshal(texts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--input-type=module", "-e", script)
	cmd.Dir = "."
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got struct{ Pkg, Example []string }
	if err := json.Unmarshal(out, &got); err != nil || len(got.Pkg) != len(texts) || len(got.Example) != len(texts) {
		t.Fatalf("node answered %d/%d digests for %d texts (%v)", len(got.Pkg), len(got.Example), len(texts), err)
	}
	for i, text := range texts {
		want := approval.Digest(text)
		shown := text
		if len(shown) > 80 {
			shown = shown[:40] + "…" + shown[len(shown)-40:]
		}
		if got.Pkg[i] != want {
			t.Errorf("sdk/typescript digest of %q = %s, the server's is %s", shown, got.Pkg[i], want)
		}
		if got.Example[i] != want {
			t.Errorf("examples/typescript digest of %q = %s, the server's is %s", shown, got.Example[i], want)
		}
	}
	// The corpus is worth running only if it holds both kinds: texts the
	// server canonicalises and texts it digests as sent.
	var canonical, asSent int
	for _, text := range texts {
		c, err := approval.Canonical([]byte(text))
		switch {
		case err == nil && c[0] == '{' && approval.Digest(text) == rawDigest(string(c)):
			canonical++
		case approval.Digest(text) == rawDigest(text):
			asSent++
		}
	}
	if canonical < 20 || asSent < 20 {
		t.Fatalf("the corpus has %d canonicalised and %d as-sent texts; both should be many", canonical, asSent)
	}
}

// hostileArguments is the differential corpus.
func hostileArguments() []string {
	texts := []string{
		// Numbers: kept as written, never through a double.
		`{"n":1e21}`, `{"n":1E21}`, `{"n":1e+21}`, `{"n":1.0}`, `{"n":1}`, `{"n":-0}`, `{"n":0}`, `{"n":-0.0}`,
		`{"n":0e0}`, `{"n":12345678901234567891}`, `{"n":9007199254740993}`, `{"n":1e400}`, `{"n":-1e-400}`,
		`{"n":0.1}`, `{"n":100}`, `{"n":1.5e-7}`, `{"n":123456789012345678901234567890.000000000000000001}`,
		// Strings: escapes in RFC 8785's form.
		`{"s":"\u00e9"}`, `{"s":"\u00E9"}`, `{"s":"é"}`, `{"s":"\/"}`, `{"s":"\u001f\u007f\u0000"}`,
		`{"s":"\b\f\n\r\t\"\\"}`, `{"s":"\u2028\u2029"}`, `{"s":"<>&'"}`, `{"s":"\ud83d\ude00"}`, `{"s":"😀"}`,
		`{"s":"\u200b\u202e\u2066\ufeff"}`, "{\"s\":\"\u202egnp.exe\"}", `{"s":"\uFFFF\uFFFE"}`,
		// Lone surrogates: not valid, digested as sent.
		`{"s":"\ud800"}`, `{"s":"\udc00x"}`, `{"s":"\ud83d"}`, `{"\ud800":1}`,
		// Key order: UTF-16 code units, not code points or bytes.
		`{"b":1,"a":2}`, `{"a":2,"b":1}`, `{"\u20ac":1,"\ud83d\ude00":2,"\ufb33":3,"\r":4,"1":5,"\u0080":6,"ö":7}`,
		`{"":0,"a":1}`, `{"\u0041":1,"B":2}`, `{"aa":1,"a":2,"ab":3}`,
		// Nesting.
		`{"a":[[[],{}],[1,[2,[3]]],{"z":{"y":[true,false,null]}}]}`, `{"a":[]}`, `{"a":{}}`, `{}`,
		`{"a":[{"b":2,"a":1},{"d":[{"f":1,"e":0}]}]}`,
		// Whitespace: insignificant inside, JSON's four only.
		"\t{ \"a\" : 1 ,\r\n \"b\":[ 1 , 2 ] }\n", " {\"a\":1} ", "\f{\"a\":1}", "\u00a0{\"a\":1}", "\ufeff{\"a\":1}",
		"\v{\"a\":1}", "{\"a\":1}\u00a0",
		// Duplicates, also through escapes.
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"a":{"b":1,"b":1}}`,
		// Not one object, or not JSON.
		``, `   `, `[1]`, `"x"`, `1`, `null`, `true`, `{`, `{"a":1} x`, `{"a":1}{}`, `{"a":01}`, `{"a":1.}`,
		`{"a":-}`, `{"a":.5}`, `{"a":+1}`, `{"a":NaN}`, `{"a":Infinity}`, `{'a':1}`, `{"a":1,}`, `{"a":[1,]}`,
		`{"a":tru}`, `{"a":True}`, "{\"a\":\"x\ty\"}", "{\"a\":\"x\ny\"}", `{"a":"\x"}`, `{"a":"\u12"}`, `{a:1}`,
		`{"a" 1}`, `{"a":1 "b":2}`, `{"a":1}}`, `{"a":[1}`, `{"a":0x10}`, `{"a":1e}`, `{"a":1e+}`, `{"a":-01}`,
	}
	// Depth: 32 levels are canonicalised, 33 are not (each text unsorted
	// and spaced, so that its canonical form is not its own text).
	texts = append(texts, `{"b":0, "a":`+strings.Repeat("[", 31)+strings.Repeat("]", 31)+`}`,
		`{"b":0, "a":`+strings.Repeat("[", 32)+strings.Repeat("]", 32)+`}`,
		strings.Repeat(`{"b":0, "a":`, 32)+"1"+strings.Repeat("}", 32),
		strings.Repeat(`{"b":0, "a":`, 33)+"1"+strings.Repeat("}", 33))
	// Size: 1 MiB of text is canonicalised, one byte more is not, counted
	// in UTF-8 bytes, not UTF-16 units.
	for _, fill := range []string{"x", "é", "😀"} {
		for _, extra := range []int{0, 1} {
			head, tail := `{"b":1,"a":"`, `"}`
			want := approval.MaxArgumentsSize + extra
			n := (want - len(head) - len(tail)) / len(fill)
			pad := want - len(head) - len(tail) - n*len(fill) // spaces, insignificant
			texts = append(texts, "{"+strings.Repeat(" ", pad)+head[1:]+strings.Repeat(fill, n)+tail)
		}
	}
	return texts
}

// rawDigest is the digest of text as sent, byte for byte.
func rawDigest(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// needNode returns node and requires dist/ built; without them the test is
// skipped, except in CI (COUNTERSIGN_E2E=1), where it must run.
func needNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join("dist", "digest.js"))
	}
	if err != nil {
		if os.Getenv("COUNTERSIGN_E2E") == "1" {
			t.Fatalf("node and `npm ci && npm run build` in sdk/typescript are needed (COUNTERSIGN_E2E=1): %v", err)
		}
		t.Skipf("node or sdk/typescript/dist missing (%v): run `npm ci && npm run build` there", err)
	}
	return node
}
