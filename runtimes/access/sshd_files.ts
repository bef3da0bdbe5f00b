/**
 * sshd's access files on the host, written by the root helper (the direct {@link AccessHost}): every path is built
 * from the helper's `[access]` config, never from a request.
 *
 * | file                                      | sshd directive                          |
 * | ----------------------------------------- | --------------------------------------- |
 * | `<ssh_dir>/bcd_ca_keys`                   | `TrustedUserCAKeys`                     |
 * | `<ssh_dir>/bcd_principals/<account>`      | `AuthorizedPrincipalsFile …/%u`         |
 * | `<ssh_dir>/bcd_revoked_keys` (+ `.in`)    | `RevokedKeys` (built by `ssh-keygen -k`) |
 * | `<ssh_dir>/sshd_config.d/bcd-access.conf` | the drop-in naming the three            |
 *
 * An apply writes each file atomically (temp file, fsync, rename, directory fsync) and only when it differs; the KRL
 * is rebuilt only when its input (kept beside it as `.in`) differs. A new drop-in is first checked with
 * `sshd -t -f <test config>`, a config that includes the candidate and then the host's `sshd_config`; a refused one
 * leaves every old file in place. The drop-in is put in place last, and sshd is reloaded only when it changed:
 * SIGHUP to the pid in `[access] sshd_pid_file` (default `/run/sshd.pid`), or `[access] reload_command` when set; no
 * pid file means no sshd runs, and nothing is reloaded. Removing access removes the drop-in first, reloads, then
 * the rest.
 *
 * @module
 */
import {
  type AccessApplied,
  type AccessFiles,
  type AccessHost,
  type AccessObserved,
  type AccessPaths,
  ACCOUNT,
  checkAccessFiles,
  isNoAccess,
  renderCaKeys,
  renderDropIn,
  renderKrlInput,
  renderPrincipals,
} from "../../core/access/mod.ts";
import type { ResolvedAgentConfig } from "../../core/config/mod.ts";
import type { Logger } from "../../core/log/mod.ts";
import { atomicWrite, removeDurably } from "../cdi/atomic_write.ts";

/** How sshd is reloaded. */
export type SshdReload = { readonly pidFile: string } | { readonly command: readonly string[] };

/** Options of {@link SshdAccessFiles}. */
export interface SshdAccessOptions {
  /** The ssh directory (`[access] ssh_dir`, default `/etc/ssh`). */
  readonly sshDir: string;
  /** The host's sshd config the drop-in is checked with (default `<ssh_dir>/sshd_config`). */
  readonly sshdConfig?: string;
  /** The sshd binary for `sshd -t` (default `sshd`). */
  readonly sshd?: string;
  /** The ssh-keygen binary for `ssh-keygen -k` (default `ssh-keygen`). */
  readonly sshKeygen?: string;
  readonly reload: SshdReload;
  readonly log?: Logger;
}

/** The file names, relative to the ssh directory, as `AccessApplied` reports them. */
export const SSHD_FILE_NAMES = {
  caKeys: "bcd_ca_keys",
  principalsDir: "bcd_principals",
  krl: "bcd_revoked_keys",
  krlInput: "bcd_revoked_keys.in",
  dropIn: "sshd_config.d/bcd-access.conf",
} as const;

const _MAX_TOOL_OUTPUT = 16 * 1024;

/** A tool's failure, with its stderr cut to a bound. */
export class SshdToolError extends Error {
  override name = "SshdToolError";
}

async function _readText(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

async function _tool(bin: string, args: string[], what: string): Promise<void> {
  const out = await new Deno.Command(bin, { args, stdin: "null", stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    const err = new TextDecoder().decode(out.stderr.subarray(0, _MAX_TOOL_OUTPUT)).trim();
    throw new SshdToolError(`${what}: ${bin} ${args.join(" ")} exited ${out.code}: ${err}`);
  }
}

/** The direct host. */
export class SshdAccessFiles implements AccessHost {
  readonly paths: AccessPaths & { readonly krlInput: string; readonly dropIn: string };
  readonly #o: SshdAccessOptions;
  /** Reloads sent (tests count them). */
  reloads = 0;

  constructor(o: SshdAccessOptions) {
    this.#o = o;
    const d = o.sshDir;
    this.paths = {
      caKeys: `${d}/${SSHD_FILE_NAMES.caKeys}`,
      principalsDir: `${d}/${SSHD_FILE_NAMES.principalsDir}`,
      krl: `${d}/${SSHD_FILE_NAMES.krl}`,
      krlInput: `${d}/${SSHD_FILE_NAMES.krlInput}`,
      dropIn: `${d}/${SSHD_FILE_NAMES.dropIn}`,
    };
  }

  async observe(): Promise<AccessObserved> {
    const principals: Record<string, string> = {};
    for (const account of await this.#accounts()) {
      const t = await _readText(`${this.paths.principalsDir}/${account}`);
      if (t !== null) principals[account] = t;
    }
    const krl = await _readText(this.paths.krl);
    const dropIn = await _readText(this.paths.dropIn);
    return {
      caKeys: await _readText(this.paths.caKeys),
      principals,
      krlInput: krl === null ? null : await _readText(this.paths.krlInput),
      dropIn: dropIn === null ? "absent" : dropIn === renderDropIn(this.paths) ? "current" : "other",
    };
  }

  async apply(f: AccessFiles): Promise<AccessApplied> {
    checkAccessFiles(f);
    const written: string[] = [];
    const removed: string[] = [];
    const seen = await this.observe();
    if (isNoAccess(f)) {
      let reloaded = false;
      if (await removeDurably(this.paths.dropIn)) {
        removed.push(SSHD_FILE_NAMES.dropIn);
        reloaded = await this.#reload();
      }
      for (
        const [name, path] of [["caKeys", this.paths.caKeys], ["krl", this.paths.krl], [
          "krlInput",
          this.paths.krlInput,
        ]] as const
      ) {
        if (await removeDurably(path)) removed.push(SSHD_FILE_NAMES[name]);
      }
      for (const account of Object.keys(seen.principals)) {
        if (await removeDurably(`${this.paths.principalsDir}/${account}`)) {
          removed.push(`${SSHD_FILE_NAMES.principalsDir}/${account}`);
        }
      }
      await Deno.remove(this.paths.principalsDir).catch((e) => {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      });
      return { written, removed, reloaded };
    }
    const dropIn = renderDropIn(this.paths);
    const stage = await Deno.makeTempDir({ dir: this.#o.sshDir, prefix: ".bcd-access-" });
    try {
      const krlInput = renderKrlInput(f);
      const krl = seen.krlInput === krlInput ? undefined : await this.#buildKrl(f, stage, krlInput);
      const dropInChanges = seen.dropIn !== "current";
      if (dropInChanges) await this.#checkDropIn(dropIn, stage);
      // Everything that can fail before a file moves has run: now the renames, the drop-in last.
      const caKeys = renderCaKeys(f);
      if (seen.caKeys !== caKeys) {
        await atomicWrite(this.paths.caKeys, caKeys);
        written.push(SSHD_FILE_NAMES.caKeys);
      }
      for (const p of f.principals) {
        const text = renderPrincipals(p.principals);
        if (seen.principals[p.account] !== text) {
          await atomicWrite(`${this.paths.principalsDir}/${p.account}`, text);
          written.push(`${SSHD_FILE_NAMES.principalsDir}/${p.account}`);
        }
      }
      const keep = new Set(f.principals.map((p) => p.account));
      for (const account of Object.keys(seen.principals)) {
        if (!keep.has(account) && await removeDurably(`${this.paths.principalsDir}/${account}`)) {
          removed.push(`${SSHD_FILE_NAMES.principalsDir}/${account}`);
        }
      }
      if (krl) {
        await atomicWrite(this.paths.krl, krl);
        await atomicWrite(this.paths.krlInput, krlInput);
        written.push(SSHD_FILE_NAMES.krl, SSHD_FILE_NAMES.krlInput);
      }
      if (dropInChanges) {
        await atomicWrite(this.paths.dropIn, dropIn);
        written.push(SSHD_FILE_NAMES.dropIn);
      }
      return { written, removed, reloaded: dropInChanges ? await this.#reload() : false };
    } finally {
      await Deno.remove(stage, { recursive: true });
    }
  }

  /** The accounts with a principals file (names that are not user names are not ours and are left alone). */
  async #accounts(): Promise<string[]> {
    const out: string[] = [];
    try {
      for await (const e of Deno.readDir(this.paths.principalsDir)) {
        if (e.isFile && ACCOUNT.test(e.name)) out.push(e.name);
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return out.sort();
  }

  /** Builds the KRL in `stage`: one `ssh-keygen -k` run per CA key, each revoking every serial under that key. */
  async #buildKrl(f: AccessFiles, stage: string, input: string): Promise<Uint8Array> {
    const spec = `${stage}/krl.in`;
    const out = `${stage}/krl`;
    await Deno.writeTextFile(spec, input);
    const bin = this.#o.sshKeygen ?? "ssh-keygen";
    for (const [i, key] of f.caKeys.entries()) {
      const ca = `${stage}/ca-${i}.pub`;
      await Deno.writeTextFile(ca, `${key}\n`);
      await _tool(bin, ["-k", ...(i > 0 ? ["-u"] : []), "-f", out, "-s", ca, spec], "building the KRL");
    }
    return await Deno.readFile(out);
  }

  /** `sshd -t` on a config that includes the candidate drop-in, then the host's config. */
  async #checkDropIn(dropIn: string, stage: string): Promise<void> {
    const candidate = `${stage}/bcd-access.conf`;
    const test = `${stage}/sshd_test_config`;
    await Deno.writeTextFile(candidate, dropIn);
    const main = this.#o.sshdConfig ?? `${this.#o.sshDir}/sshd_config`;
    await Deno.writeTextFile(test, `Include ${candidate}\nInclude ${main}\n`);
    await _tool(this.#o.sshd ?? "sshd", ["-t", "-f", test], "sshd -t refused the drop-in");
  }

  /** Reloads sshd; false when no sshd runs (no pid file). */
  async #reload(): Promise<boolean> {
    const r = this.#o.reload;
    if ("command" in r) {
      const [bin, ...args] = r.command;
      await _tool(bin!, args, "reloading sshd");
    } else {
      const text = await _readText(r.pidFile);
      if (text === null) {
        this.#o.log?.warn({ pid_file: r.pidFile }, "access: no sshd pid file; sshd reads the drop-in when it starts");
        return false;
      }
      const pid = Number(text.trim());
      if (!Number.isSafeInteger(pid) || pid < 2) {
        throw new SshdToolError(`${r.pidFile} holds ${JSON.stringify(text.trim())}, not a pid`);
      }
      Deno.kill(pid, "SIGHUP");
    }
    this.reloads++;
    this.#o.log?.info({ reloads: this.reloads }, "access: sshd reloaded (the drop-in changed)");
    return true;
  }
}

/** The helper's access files from its config (`[access]`). */
export function sshdAccessFiles(config: ResolvedAgentConfig, log?: Logger): SshdAccessFiles {
  const a = config.access;
  return new SshdAccessFiles({
    sshDir: a.sshDir,
    sshdConfig: a.sshdConfig,
    sshd: a.sshd,
    sshKeygen: a.sshKeygen,
    reload: a.reloadCommand ? { command: a.reloadCommand } : { pidFile: a.sshdPidFile },
    ...(log ? { log } : {}),
  });
}
