// validate.mjs checks the contract's schemas with ajv (JSON Schema 2020-12,
// ajv-formats): it compiles every schema in strict mode and answers, for
// each case, whether the body is valid. Usage: node validate.mjs CASES.json
// (written by contract_test.go); prints one JSON array of booleans, or
// exits 1 naming what failed to compile.
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const { defs, cases } = JSON.parse(readFileSync(process.argv[2], "utf8"));
const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats(ajv);
ajv.addSchema({ $id: "https://countersign.invalid/contract", $defs: defs });
const results = cases.map((c) => {
  const validate = ajv.compile(rebase(c.schema));
  return validate(c.body);
});
process.stdout.write(JSON.stringify(results));

// rebase points a case's local "#/$defs/..." references at the shared
// contract schema.
function rebase(schema) {
  return JSON.parse(JSON.stringify(schema).replaceAll('"#/$defs/', '"https://countersign.invalid/contract#/$defs/'));
}
