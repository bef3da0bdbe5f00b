/**
 * The node's {@link AccessHost} over the root helper: `access.observe` and `access.apply`, each answer checked for
 * its shape before the converger sees it. A refused or failed request is a `HelperError` (`helper: …`): retryable.
 *
 * @module
 */
import type { AccessApplied, AccessFiles, AccessHost, AccessObserved } from "../../core/access/mod.ts";
import { HelperError } from "../../core/helper/mod.ts";
import type { HelperClient } from "./client.ts";

const _strs = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === "string");
const _textOrNull = (v: unknown) => v === null || typeof v === "string";

function _malformed(op: string, what: string): never {
  throw new HelperError("malformed", `${op}: the answer's ${what}`);
}

/** sshd's access files, written by the helper. */
export class HelperAccessHost implements AccessHost {
  constructor(private readonly c: HelperClient) {}

  async observe(): Promise<AccessObserved> {
    const o = await this.c.call("access.observe", {});
    if (!_textOrNull(o.caKeys) || !_textOrNull(o.krlInput)) _malformed("access.observe", "files");
    if (!["current", "absent", "other"].includes(o.dropIn)) _malformed("access.observe", "drop-in state");
    const p = o.principals as unknown;
    if (typeof p !== "object" || p === null || Object.values(p).some((v) => typeof v !== "string")) {
      _malformed("access.observe", "principals");
    }
    return o;
  }

  async apply(files: AccessFiles): Promise<AccessApplied> {
    const r = await this.c.call("access.apply", {
      caKeys: [...files.caKeys],
      principals: files.principals.map((p) => ({ account: p.account, principals: [...p.principals] })),
      revokedSerials: [...files.revokedSerials],
    });
    if (!_strs(r.written) || !_strs(r.removed) || typeof r.reloaded !== "boolean") _malformed("access.apply", "fields");
    return r;
  }
}
