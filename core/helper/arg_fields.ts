/**
 * The building blocks every op's default-deny argument checks share (`args.ts` and the `args_*.ts` files beside it):
 * a value shown in a refusal, a refusal naming op, field and value, and an object with only its allowed fields.
 *
 * @module
 */
import { HelperError } from "./errors.ts";

/** An argument object's fields, before they are checked one by one. */
export type Fields = Record<string, unknown>;

/** A value for a refusal message: JSON, cut at 80 characters. */
export function showArg(v: unknown): string {
  let s: string;
  try {
    s = JSON.stringify(v) ?? String(v);
  } catch (e) {
    if (!(e instanceof TypeError)) throw e; // a cycle or a BigInt
    s = String(v);
  }
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** Refuses `v` as the value of `field` of `op`, saying why: `invalid-argument`. */
export function refuseArg(op: string, field: string, v: unknown, why: string): never {
  throw new HelperError("invalid-argument", `${op}: ${field} ${showArg(v)} ${why}`);
}

/**
 * The object at `path` of `op`'s arguments, with only `allowed` fields (an unknown one is `unknown-field`, by name) and
 * every `required` one present (`invalid-argument`).
 */
export function argObject(
  op: string,
  path: string,
  raw: unknown,
  allowed: readonly string[],
  required: readonly string[] = allowed,
): Fields {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new HelperError("invalid-argument", `${op}: ${path} is not an object`);
  }
  const o = raw as Fields;
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) throw new HelperError("unknown-field", `${op}: unknown field ${path}.${k}`);
  }
  for (const k of required) {
    if (o[k] === undefined) throw new HelperError("invalid-argument", `${op}: ${path}.${k} is missing`);
  }
  return o;
}
