/**
 * Test support: checks a CDI spec against the CDI JSON schema (copied into `fixtures/cdi/` from
 * `../shared/vectors/cdi/`) and the CDI name grammar.
 *
 * @module
 */
import assert from "node:assert/strict";
import { isValidCdiDeviceName, isValidCdiKind, isValidQualifiedCdiName } from "./cdi_name.ts";
import { type Schema, type SchemaDocs, validateSchema } from "./json_schema.ts";

/** Where the schema copies are. */
export const CDI_SCHEMA_DIR = new URL("../../fixtures/cdi/", import.meta.url).pathname;

/** The CDI schema documents: the root schema and `defs.json`. */
export function loadCdiSchema(): SchemaDocs {
  const read = (f: string) => JSON.parse(Deno.readTextFileSync(`${CDI_SCHEMA_DIR}${f}`)) as Schema;
  return { "": read("schema.json"), "defs.json": read("defs.json") };
}

/** Asserts that `spec` validates against the CDI schema and its names follow the CDI grammar. */
export function assertValidCdiSpec(spec: unknown, docs: SchemaDocs = loadCdiSchema()): void {
  assert.deepEqual(validateSchema(spec, docs), [], "CDI schema");
  const s = spec as { kind: string; devices: { name: string }[] };
  assert.ok(isValidCdiKind(s.kind), `kind ${s.kind}`);
  for (const d of s.devices) {
    assert.ok(isValidCdiDeviceName(d.name), `device name ${d.name}`);
    assert.ok(isValidQualifiedCdiName(`${s.kind}=${d.name}`));
  }
}
