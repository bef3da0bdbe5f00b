/**
 * An in-memory {@link AccessHost}: the files as strings, the drop-in as a flag, a reload counter, and a switch that
 * makes the next `sshd -t` fail. It keeps the real host's rules (write only what differs, reload only on a drop-in
 * change, a failed check changes nothing), so the same contract suite runs against it.
 *
 * @module
 */
import {
  type AccessFiles,
  type AccessObserved,
  checkAccessFiles,
  isNoAccess,
  renderCaKeys,
  renderKrlInput,
  renderPrincipals,
} from "./files.ts";
import type { AccessApplied, AccessHost } from "./ports.ts";

/** The fake's file names, the real host's spelling. */
export const FAKE_NAMES = {
  caKeys: "bcd_ca_keys",
  principals: (account: string) => `bcd_principals/${account}`,
  krl: "bcd_revoked_keys",
  krlInput: "bcd_revoked_keys.in",
  dropIn: "sshd_config.d/bcd-access.conf",
} as const;

/** The in-memory host. */
export class FakeAccessHost implements AccessHost {
  /** File name to text (the KRL holds its input's text here). */
  readonly files = new Map<string, string>();
  reloads = 0;
  /** When set, the next check of a new drop-in fails with this message. */
  failNextCheck: string | undefined;

  observe(): Promise<AccessObserved> {
    const principals: Record<string, string> = {};
    for (const [k, v] of this.files) {
      if (k.startsWith("bcd_principals/")) principals[k.slice("bcd_principals/".length)] = v;
    }
    return Promise.resolve({
      caKeys: this.files.get(FAKE_NAMES.caKeys) ?? null,
      principals,
      krlInput: this.files.has(FAKE_NAMES.krl) ? this.files.get(FAKE_NAMES.krlInput) ?? null : null,
      dropIn: this.files.has(FAKE_NAMES.dropIn) ? "current" : "absent",
    });
  }

  // deno-lint-ignore require-await
  async apply(f: AccessFiles): Promise<AccessApplied> {
    checkAccessFiles(f);
    const want = new Map<string, string>();
    if (!isNoAccess(f)) {
      want.set(FAKE_NAMES.caKeys, renderCaKeys(f));
      for (const p of f.principals) want.set(FAKE_NAMES.principals(p.account), renderPrincipals(p.principals));
      want.set(FAKE_NAMES.krlInput, renderKrlInput(f));
      want.set(FAKE_NAMES.krl, renderKrlInput(f));
      want.set(FAKE_NAMES.dropIn, "drop-in");
    }
    const dropInChanges = want.has(FAKE_NAMES.dropIn) !== this.files.has(FAKE_NAMES.dropIn);
    if (dropInChanges && want.has(FAKE_NAMES.dropIn) && this.failNextCheck !== undefined) {
      const msg = this.failNextCheck;
      this.failNextCheck = undefined;
      throw new Error(`sshd -t refused the drop-in: ${msg}`);
    }
    const written: string[] = [];
    const removed: string[] = [];
    for (const [k, v] of want) {
      if (this.files.get(k) !== v) {
        this.files.set(k, v);
        written.push(k);
      }
    }
    for (const k of [...this.files.keys()]) {
      if (!want.has(k)) {
        this.files.delete(k);
        removed.push(k);
      }
    }
    if (dropInChanges) this.reloads++;
    return { written, removed, reloaded: dropInChanges };
  }
}
