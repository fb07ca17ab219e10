// Validates every recorded answer (openapi/testdata/answers) against the
// served OpenAPI document with openapi-response-validator (ajv), as an API
// user would: node validate.js <modules> <openapi.json> <answers dir>.
// Response $refs are resolved first (the validator reads only inline
// responses and would expect null for a $ref). Prints a JSON summary.
"use strict";
const fs = require("fs");
const path = require("path");
const [modules, docFile, dir] = process.argv.slice(2);
const Validator = require(path.join(modules, "openapi-response-validator")).default;
const doc = JSON.parse(fs.readFileSync(docFile, "utf8"));

function resolve(ref) {
  return ref.replace(/^#\//, "").split("/").reduce((o, k) => o[k.replace(/~1/g, "/").replace(/~0/g, "~")], doc);
}

const validators = new Map();
function validatorFor(method, p) {
  const key = method + " " + p;
  if (!validators.has(key)) {
    const op = (doc.paths[p] || {})[method.toLowerCase()];
    if (!op) throw new Error(key + " is not in the document");
    const responses = {};
    for (const [status, r] of Object.entries(op.responses)) {
      responses[status] = r.$ref ? resolve(r.$ref) : r;
    }
    validators.set(key, new Validator({ responses, components: doc.components }));
  }
  return validators.get(key);
}

const summary = { total: 0, valid: 0, invalid: [] };
for (const file of fs.readdirSync(dir).filter((f) => f.endsWith(".json")).sort()) {
  const rec = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8"));
  summary.total++;
  if (rec.body === undefined && rec.contentType && !rec.contentType.startsWith("application/json")) {
    summary.valid++; // not JSON (an event stream): for its own test
    summary.skipped = (summary.skipped || 0) + 1;
    continue;
  }
  let errors;
  try {
    errors = validatorFor(rec.method, rec.path).validateResponse(rec.status, rec.body);
  } catch (e) {
    errors = { message: String(e) };
  }
  if (errors) summary.invalid.push({ file, errors });
  else summary.valid++;
}
process.stdout.write(JSON.stringify(summary, null, 2) + "\n");
