/**
 * A JSON-schema (draft-07) checker sufficient for the CDI schema (`../shared/vectors/cdi/`): `type` (object, array,
 * string, integer, number, boolean), `properties`, `required`, `items`, `patternProperties`, `additionalProperties`
 * (boolean or schema), `minimum`, `maximum`, `enum` and `$ref` to `#/definitions/…` in the same document or to
 * `<file>#/definitions/…` in a sibling document. Unknown keywords are ignored, as draft-07 says. Written here instead
 * of pulling in `ajv` (and its dependency tree) for one test-time check; the CDI vectors' own examples are its test.
 *
 * @module
 */

/** A schema node. */
export type Schema = Record<string, unknown>;

/** One violation: where, and what. */
export interface SchemaError {
  readonly path: string;
  readonly message: string;
}

/** Documents `$ref`s may point into, by file name (`defs.json`); `""` is the root schema. */
export type SchemaDocs = Readonly<Record<string, Schema>>;

function _resolve(ref: string, docs: SchemaDocs, current: string): { schema: Schema; doc: string } {
  const [file, pointer = ""] = ref.split("#");
  const doc = file ? file : current;
  let node: unknown = docs[doc];
  if (node === undefined) throw new RangeError(`$ref ${ref}: no document ${JSON.stringify(doc)}`);
  for (const part of pointer.split("/").filter((p) => p !== "")) {
    node = (node as Record<string, unknown>)[part.replace(/~1/g, "/").replace(/~0/g, "~")];
    if (node === undefined) throw new RangeError(`$ref ${ref} points nowhere`);
  }
  return { schema: node as Schema, doc };
}

function _type(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

/** Every violation of `schema` by `value` (empty when it validates). */
export function validateSchema(value: unknown, docs: SchemaDocs, root = ""): SchemaError[] {
  const errors: SchemaError[] = [];
  const walk = (v: unknown, s: Schema, doc: string, path: string, depth: number) => {
    if (depth > 64) throw new RangeError("schema recursion too deep");
    if (typeof s.$ref === "string") {
      const r = _resolve(s.$ref, docs, doc);
      walk(v, r.schema, r.doc, path, depth + 1);
      return;
    }
    const t = _type(v);
    if (typeof s.type === "string") {
      const ok = s.type === t || (s.type === "number" && t === "integer");
      if (!ok) {
        errors.push({ path, message: `is ${t}, not ${s.type}` });
        return;
      }
    }
    if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) {
      errors.push({ path, message: "is not one of the enum values" });
    }
    if (typeof v === "number") {
      if (typeof s.minimum === "number" && v < s.minimum) errors.push({ path, message: `is below ${s.minimum}` });
      if (typeof s.maximum === "number" && v > s.maximum) errors.push({ path, message: `is above ${s.maximum}` });
    }
    if (t === "object") {
      const o = v as Record<string, unknown>;
      for (const k of (s.required as string[] | undefined) ?? []) {
        if (!(k in o)) errors.push({ path, message: `lacks required property ${k}` });
      }
      const props = (s.properties ?? {}) as Record<string, Schema>;
      const patterns = Object.entries((s.patternProperties ?? {}) as Record<string, Schema>).map((
        [p, ps],
      ) => [new RegExp(p, "u"), ps] as const);
      for (const [k, x] of Object.entries(o)) {
        let matched = false;
        if (k in props) {
          matched = true;
          walk(x, props[k]!, doc, `${path}/${k}`, depth + 1);
        }
        for (const [re, ps] of patterns) {
          if (re.test(k)) {
            matched = true;
            walk(x, ps, doc, `${path}/${k}`, depth + 1);
          }
        }
        if (!matched && s.additionalProperties === false) errors.push({ path, message: `has extra property ${k}` });
        else if (!matched && typeof s.additionalProperties === "object") {
          walk(x, s.additionalProperties as Schema, doc, `${path}/${k}`, depth + 1);
        }
      }
    }
    if (t === "array" && typeof s.items === "object" && s.items !== null) {
      (v as unknown[]).forEach((x, i) => walk(x, s.items as Schema, doc, `${path}/${i}`, depth + 1));
    }
  };
  walk(value, docs[root]!, root, "", 0);
  return errors;
}
