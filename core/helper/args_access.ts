/**
 * The argument checks of the helper's `access.*` ops (000 §Break-glass SSH), kept beside the default-deny table of
 * `args.ts`, which registers them:
 *
 * | op               | fields                                     | rule                                              |
 * | ---------------- | ------------------------------------------ | ------------------------------------------------- |
 * | `access.observe` | none                                       |                                                   |
 * | `access.apply`   | `caKeys`, `principals`, `revokedSerials`   | `core/access/files.ts` `checkAccessFiles`: each CA key exactly one OpenSSH public key as `<type> <base64>`; principals `<account>@…` on one line, without whitespace, grouped by user-name account in sorted order; serials sorted integers ≥ 1; each list bounded as the section is |
 *
 * The node sends content, never a path: the helper names every file from its `[access]` config.
 *
 * @module
 */
import { type AccessFiles, checkAccessFiles } from "../access/files.ts";
import { MAX_CA_KEYS, MAX_PRINCIPALS, MAX_REVOKED_SERIALS } from "../access/section.ts";
import { SshKeyError } from "../access/ssh_public_key.ts";
import { argObject as _object } from "./arg_fields.ts";
import { HelperError } from "./errors.ts";

function _list(op: string, field: string, v: unknown, max: number, each: "string" | "number"): unknown[] {
  if (!Array.isArray(v) || v.length > max || v.some((x) => typeof x !== each)) {
    throw new HelperError("invalid-argument", `${op}: ${field} is not a list of at most ${max} ${each}s`);
  }
  return v;
}

/** `access.observe`: no arguments. */
export function checkAccessObserve(raw: unknown): Record<never, never> {
  _object("access.observe", "args", raw, []);
  return {};
}

/** `access.apply`: the files' content, checked in full before anything runs. */
export function checkAccessApply(raw: unknown): AccessFiles {
  const op = "access.apply";
  const a = _object(op, "args", raw, ["caKeys", "principals", "revokedSerials"]);
  const caKeys = _list(op, "caKeys", a.caKeys, MAX_CA_KEYS, "string") as string[];
  if (!Array.isArray(a.principals) || a.principals.length > MAX_PRINCIPALS) {
    throw new HelperError("invalid-argument", `${op}: principals is not a list of at most ${MAX_PRINCIPALS} accounts`);
  }
  let total = 0;
  const principals = a.principals.map((p, i) => {
    const o = _object(op, `principals[${i}]`, p, ["account", "principals"]);
    if (typeof o.account !== "string") {
      throw new HelperError("invalid-argument", `${op}: principals[${i}].account is not a string`);
    }
    const list = _list(op, `principals[${i}].principals`, o.principals, MAX_PRINCIPALS, "string") as string[];
    total += list.length;
    return { account: o.account, principals: [...list] };
  });
  if (total > MAX_PRINCIPALS) {
    throw new HelperError("invalid-argument", `${op}: ${total} principals (at most ${MAX_PRINCIPALS})`);
  }
  const revokedSerials = _list(op, "revokedSerials", a.revokedSerials, MAX_REVOKED_SERIALS, "number") as number[];
  const files: AccessFiles = { caKeys: [...caKeys], principals, revokedSerials: [...revokedSerials] };
  try {
    checkAccessFiles(files);
  } catch (e) {
    if (e instanceof RangeError || e instanceof SshKeyError) {
      throw new HelperError("invalid-argument", `${op}: ${e.message}`, { cause: e });
    }
    throw e;
  }
  return files;
}
