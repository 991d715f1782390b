// The arguments digest Countersign binds an approval to: "sha256:" + hex
// SHA-256 of the RFC 8785 canonical form with every number kept as written
// (docs/api.md, section 4), or of the text as sent when it is not one JSON
// object within the limits. The same rule as examples/typescript/gate.mjs.
import { createHash } from "node:crypto";

const MAX_ARGUMENTS_BYTES = 1 << 20;
const MAX_DEPTH = 32;

/** The digest the server computes for `text`. */
export function argumentsDigest(text: string): string {
  let payload = text;
  try {
    payload = canonical(text);
  } catch { /* not a valid arguments object: digest the text */ }
  return "sha256:" + createHash("sha256").update(payload, "utf8").digest("hex");
}

class JSONNumber {
  constructor(readonly text: string) {}
}

type Value = Map<string, Value> | Value[] | JSONNumber | string | boolean | null;

function canonical(text: string): string {
  if (Buffer.byteLength(text, "utf8") > MAX_ARGUMENTS_BYTES || !text.trim()) throw new Error("limits");
  const value = parse(text);
  if (!(value instanceof Map)) throw new Error("not an object");
  return write(value);
}

function write(v: Value): string {
  if (Array.isArray(v)) return "[" + v.map(write).join(",") + "]";
  // The default sort compares UTF-16 code units, as RFC 8785 asks.
  if (v instanceof Map) return "{" + [...v.keys()].sort().map((k) => quote(k) + ":" + write(v.get(k)!)).join(",") + "}";
  if (v instanceof JSONNumber) return v.text; // as written: never through a double
  if (typeof v === "string") return quote(v);
  return JSON.stringify(v); // true, false, null
}

function quote(s: string): string {
  if (!s.isWellFormed()) throw new Error("lone surrogate");
  return JSON.stringify(s);
}

// parse reads one JSON value strictly (JSON.parse would turn numbers into
// doubles and keep the last of two equal keys): objects become Maps,
// numbers keep their text; a duplicate key or nesting deeper than 32 fails.
function parse(t: string): Value {
  let i = 0;
  let depth = 0;
  const fail = (why: string): never => { throw new Error(why); };
  const ws = () => { while (i < t.length && " \t\r\n".includes(t[i])) i++; };
  const token = (re: RegExp): string => {
    re.lastIndex = i;
    const m = re.exec(t);
    if (!m) fail("not valid JSON");
    i = re.lastIndex;
    return m![0];
  };
  const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
  const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?/y;
  const LITERAL = /true|false|null/y;
  function value(): Value {
    ws();
    const c = t[i];
    if (c === "{" || c === "[") {
      if (++depth > MAX_DEPTH) fail("too deep");
      i++;
      const close = c === "{" ? "}" : "]";
      const obj: Map<string, Value> | Value[] = c === "{" ? new Map() : [];
      ws();
      if (t[i] === close) { i++; depth--; return obj; }
      for (;;) {
        if (obj instanceof Map) {
          ws();
          const key = JSON.parse(token(STRING)) as string;
          ws();
          if (t[i++] !== ":") fail("not valid JSON");
          if (obj.has(key)) fail("duplicate key");
          obj.set(key, value());
        } else {
          obj.push(value());
        }
        ws();
        const sep = t[i++];
        if (sep === ",") continue;
        if (sep === close) { depth--; return obj; }
        fail("not valid JSON");
      }
    }
    if (c === '"') return JSON.parse(token(STRING)) as string;
    if (c === "-" || (c >= "0" && c <= "9")) return new JSONNumber(token(NUMBER));
    return JSON.parse(token(LITERAL)) as boolean | null;
  }
  const v = value();
  ws();
  if (i !== t.length) fail("more than one JSON value");
  return v;
}
