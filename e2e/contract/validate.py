"""validate.py checks the contract's schemas with Python's jsonschema
(Debian's python3-jsonschema, JSON Schema 2020-12): it checks every schema
and answers, for each case, whether the body is valid. Usage:
python3 validate.py CASES.json (written by contract_test.go); prints one
JSON array of booleans."""
import json
import sys

import jsonschema

with open(sys.argv[1], encoding="utf-8") as f:
    doc = json.load(f)
defs = doc["defs"]
checker = jsonschema.FormatChecker()
results = []
for case in doc["cases"]:
    schema = dict(case["schema"])
    schema["$defs"] = defs
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema, format_checker=checker)
    results.append(validator.is_valid(case["body"]))
json.dump(results, sys.stdout)
