/**
 * The `sysctl` unit's host half, run by the root helper: live values under `/proc/sys` and bcd's fixed file
 * `/etc/sysctl.d/90-bcd.conf`, which also records each managed key's value before bcd first set it
 * (`# bcd-original: <key> = <value>`). Both roots come from the helper's configuration (tests redirect them); a key
 * becomes a path only after {@link isAllowedSysctlKey} accepted it.
 *
 * A set writes the file before the live value, a restore the live value before the file, so a crash in between leaves
 * the record holding every original bcd may still have to give back.
 *
 * @module
 */
import {
  isAllowedSysctlKey,
  type ManagedSysctl,
  type SysctlObserved,
  type SysctlPort,
  type SysctlStep,
} from "../../core/host/mod.ts";

/** The file bcd's sysctl unit writes, under the helper's /etc root. */
export const SYSCTL_CONF = "sysctl.d/90-bcd.conf";
/** The largest file read back. */
const _MAX_FILE = 256 * 1024;
const _HEADER =
  "# Written by bcd-helper for the host section's sysctl unit; a change by hand is put back on the next pass.";

/** Options of {@link SysctlFiles}. */
export interface SysctlFilesOptions {
  /** Default `/proc/sys`. */
  readonly procSys?: string;
  /** Default `/etc`. */
  readonly etc?: string;
}

/** The real sysctl port. */
export class SysctlFiles implements SysctlPort {
  readonly #proc: string;
  readonly conf: string;
  constructor(opts: SysctlFilesOptions = {}) {
    this.#proc = opts.procSys ?? "/proc/sys";
    this.conf = `${opts.etc ?? "/etc"}/${SYSCTL_CONF}`;
  }

  #path(key: string): string {
    if (!isAllowedSysctlKey(key)) throw new RangeError(`sysctl key ${JSON.stringify(key)} is not allowed`);
    return `${this.#proc}/${key.replaceAll(".", "/")}`;
  }

  async #live(key: string): Promise<string | null> {
    try {
      return (await Deno.readTextFile(this.#path(key))).trim();
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    }
  }

  async #managed(): Promise<Map<string, ManagedSysctl>> {
    let text: string;
    try {
      const f = await Deno.open(this.conf);
      try {
        const st = await f.stat();
        if (st.size > _MAX_FILE) throw new RangeError(`${this.conf} is ${st.size} bytes, more than ${_MAX_FILE}`);
      } finally {
        f.close();
      }
      text = await Deno.readTextFile(this.conf);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return new Map();
      throw e;
    }
    const originals = new Map<string, string>();
    const out = new Map<string, ManagedSysctl>();
    for (const line of text.split("\n")) {
      const o = line.match(/^# bcd-original: (\S+) = (.*)$/);
      if (o) {
        originals.set(o[1]!, o[2]!);
        continue;
      }
      const v = line.match(/^(\S+) = (.*)$/);
      if (v && isAllowedSysctlKey(v[1]!) && originals.has(v[1]!)) {
        out.set(v[1]!, { value: v[2]!, original: originals.get(v[1]!)! });
      }
    }
    return out;
  }

  async #write(managed: Map<string, ManagedSysctl>): Promise<void> {
    const lines = [_HEADER];
    for (const [k, m] of [...managed].sort(([a], [b]) => a < b ? -1 : 1)) {
      lines.push(`# bcd-original: ${k} = ${m.original}`, `${k} = ${m.value}`);
    }
    const dir = this.conf.slice(0, this.conf.lastIndexOf("/"));
    await Deno.mkdir(dir, { recursive: true });
    const tmp = `${this.conf}.tmp`;
    await Deno.writeTextFile(tmp, lines.join("\n") + "\n", { mode: 0o644 });
    await Deno.rename(tmp, this.conf);
  }

  async read(keys: readonly string[]): Promise<SysctlObserved> {
    const managed = await this.#managed();
    const live: Record<string, string | null> = {};
    for (const k of new Set([...keys, ...managed.keys()])) live[k] = await this.#live(k);
    return { live, managed: Object.fromEntries(managed) };
  }

  async apply(steps: readonly SysctlStep[]): Promise<Record<string, string | null>> {
    const managed = await this.#managed();
    const sets = steps.filter((s) => s.op === "set");
    for (const s of sets) {
      const cur = await this.#live(s.key);
      if (cur === null) throw new RangeError(`sysctl ${s.key}: this kernel has no such key`);
      managed.set(s.key, { value: s.value, original: managed.get(s.key)?.original ?? cur });
    }
    if (sets.length) await this.#write(managed);
    for (const s of sets) await Deno.writeTextFile(this.#path(s.key), `${s.value}\n`);
    const restores = steps.filter((s) => s.op === "restore");
    for (const s of restores) {
      const rec = managed.get(s.key);
      if (rec) await Deno.writeTextFile(this.#path(s.key), `${rec.original}\n`);
      managed.delete(s.key);
    }
    if (restores.length) await this.#write(managed);
    const back: Record<string, string | null> = {};
    for (const s of steps) back[s.key] = await this.#live(s.key);
    return back;
  }
}
