// Judges bazaar extensions with the official validator, @x402/extensions
// (run by internal/mcp/discovery_test.go). stdin: a JSON array of
// {name, resourceUrl, bazaar}; stdout: a JSON array, in the same order, of
// {name, valid, errors, specValid, specErrors, catalogUrl, toolName}:
// validateDiscoveryExtension (the schema member validates info, with ajv),
// validateDiscoveryExtensionSpec (the rules of each input type), and what
// a facilitator's extractDiscoveryInfo catalogs from a v2 payment naming
// resourceUrl and carrying the extension (its key: the URL and toolName).
import {
  extractDiscoveryInfo,
  validateDiscoveryExtension,
  validateDiscoveryExtensionSpec,
} from "@x402/extensions/bazaar";

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const cases = JSON.parse(Buffer.concat(chunks).toString("utf8"));

// The validator warns on the console when it refuses; keep stdout for the
// answer.
console.warn = (...args) => process.stderr.write(args.join(" ") + "\n");

const out = cases.map(({ name, resourceUrl, bazaar }) => {
  const v = validateDiscoveryExtension(bazaar);
  const s = validateDiscoveryExtensionSpec(bazaar);
  const info = extractDiscoveryInfo(
    { x402Version: 2, resource: { url: resourceUrl }, accepted: {}, payload: {}, extensions: { bazaar } },
    {},
    true,
  );
  return {
    name,
    valid: v.valid,
    errors: v.errors ?? [],
    specValid: s.valid,
    specErrors: s.errors ?? [],
    catalogUrl: info?.resourceUrl ?? null,
    toolName: info?.toolName ?? null,
  };
});
process.stdout.write(JSON.stringify(out) + "\n");
