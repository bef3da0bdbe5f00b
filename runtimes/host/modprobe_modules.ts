/**
 * The `kernel-modules` unit's host half, run by the root helper: the loaded modules from `/proc/modules`, loads and
 * unloads through `modprobe`, and bcd's two fixed files under the helper's `/etc` root:
 *
 * - `modules-load.d/bcd.conf`: one module a line, loaded at boot by `systemd-modules-load`; a module bcd loaded
 *   itself (it was not loaded when bcd first persisted it) is preceded by `# bcd-loaded: <name>`, the record that lets
 *   bcd unload it again and never a module it found loaded;
 * - `modprobe.d/bcd.conf`: `options <name> <options>` for each module with options.
 *
 * A file that would hold no module is removed. The argv is built here from checked values only
 * (`modprobe -- <name> <key=value>…`, `modprobe -r -- <name>`): options go on the command line as well as in the file,
 * so a load takes them whatever `/etc` root the helper runs with. A load writes the files before modprobe runs, an
 * unload runs modprobe before the files drop the module (and keeps the record when it fails), so a crash in between
 * leaves a record of every module bcd may still have to unload.
 *
 * @module
 */
import {
  isModuleName,
  isModuleOptions,
  type KernelModulesApplied,
  type KernelModulesObserved,
  type KernelModulesPort,
  type KernelModuleStep,
  type ManagedModule,
} from "../../core/host/mod.ts";

/** bcd's boot-time module list, under the helper's /etc root. */
export const MODULES_LOAD_CONF = "modules-load.d/bcd.conf";
/** bcd's module options, under the helper's /etc root. */
export const MODPROBE_CONF = "modprobe.d/bcd.conf";
/** The largest file read (`/proc/modules` of a big host is well under it). */
const _MAX_FILE = 1024 * 1024;
/** The most of modprobe's stderr kept in a failure. */
const _MAX_MESSAGE = 500;
const _HEADER = "# Written by bcd-helper for the host section's kernel-modules unit; a change by hand is put back.";

/** Options of {@link ModprobeModules}. */
export interface ModprobeModulesOptions {
  /** Default `/etc`. */
  readonly etc?: string;
  /** Default `/proc/modules`. */
  readonly procModules?: string;
  /** The program (default `modprobe`, found on `PATH`). */
  readonly modprobe?: string;
  /** Per-run timeout in ms (default 60 s). */
  readonly timeoutMs?: number;
}

async function _readBounded(path: string): Promise<string | undefined> {
  let f: Deno.FsFile;
  try {
    f = await Deno.open(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
  try {
    const buf = new Uint8Array(_MAX_FILE + 1);
    let n = 0;
    while (n < buf.length) {
      const r = await f.read(buf.subarray(n));
      if (r === null) break;
      n += r;
    }
    if (n > _MAX_FILE) throw new RangeError(`${path} is larger than ${_MAX_FILE} bytes`);
    return new TextDecoder().decode(buf.subarray(0, n));
  } finally {
    f.close();
  }
}

async function _writeAtomic(path: string, text: string | undefined): Promise<void> {
  if (text === undefined) {
    await Deno.remove(path).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
    return;
  }
  await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  const tmp = `${path}.tmp`;
  await Deno.writeTextFile(tmp, text, { mode: 0o644 });
  await Deno.rename(tmp, path);
}

/** The real kernel-modules port. */
export class ModprobeModules implements KernelModulesPort {
  readonly loadConf: string;
  readonly optionsConf: string;
  readonly #proc: string;
  readonly #bin: string;
  readonly #timeout: number;

  constructor(opts: ModprobeModulesOptions = {}) {
    const etc = opts.etc ?? "/etc";
    this.loadConf = `${etc}/${MODULES_LOAD_CONF}`;
    this.optionsConf = `${etc}/${MODPROBE_CONF}`;
    this.#proc = opts.procModules ?? "/proc/modules";
    this.#bin = opts.modprobe ?? "modprobe";
    this.#timeout = opts.timeoutMs ?? 60_000;
  }

  async #loaded(): Promise<Set<string>> {
    const text = await _readBounded(this.#proc) ?? "";
    return new Set(text.split("\n").map((l) => l.split(" ", 1)[0]!).filter((n) => isModuleName(n)));
  }

  async #managed(): Promise<Map<string, ManagedModule>> {
    const load = await _readBounded(this.loadConf) ?? "";
    const opts = await _readBounded(this.optionsConf) ?? "";
    const options = new Map<string, string>();
    for (const line of opts.split("\n")) {
      const m = /^options (\S+) (.+)$/.exec(line);
      if (m && isModuleName(m[1]) && isModuleOptions(m[2])) options.set(m[1], m[2]);
    }
    const byBcd = new Set<string>();
    const out = new Map<string, ManagedModule>();
    for (const line of load.split("\n")) {
      const rec = /^# bcd-loaded: (\S+)$/.exec(line);
      if (rec) {
        byBcd.add(rec[1]!);
        continue;
      }
      if (!isModuleName(line)) continue;
      const o = options.get(line);
      out.set(line, { name: line, ...(o !== undefined ? { options: o } : {}), loadedByBcd: byBcd.has(line) });
    }
    return out;
  }

  async #write(managed: Map<string, ManagedModule>): Promise<void> {
    const mods = [...managed.values()].sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    const load = mods.flatMap((m) => m.loadedByBcd ? [`# bcd-loaded: ${m.name}`, m.name] : [m.name]);
    const opts = mods.filter((m) => m.options !== undefined).map((m) => `options ${m.name} ${m.options}`);
    await _writeAtomic(this.loadConf, load.length ? [_HEADER, ...load, ""].join("\n") : undefined);
    await _writeAtomic(this.optionsConf, opts.length ? [_HEADER, ...opts, ""].join("\n") : undefined);
  }

  /** Runs modprobe; its stderr (bounded) when it failed. */
  async #modprobe(args: readonly string[]): Promise<string | undefined> {
    let out: Deno.CommandOutput;
    try {
      out = await new Deno.Command(this.#bin, {
        args: [...args],
        stdin: "null",
        stdout: "null",
        stderr: "piped",
        signal: AbortSignal.timeout(this.#timeout),
      }).output();
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return `${this.#bin} is not installed`;
      throw e;
    }
    if (out.success) return undefined;
    const msg = new TextDecoder().decode(out.stderr).trim().replaceAll(/\s*\n\s*/g, "; ");
    return (msg || `exit ${out.code}`).slice(0, _MAX_MESSAGE);
  }

  async read(): Promise<KernelModulesObserved> {
    return { loaded: [...await this.#loaded()].sort(), managed: [...(await this.#managed()).values()] };
  }

  async apply(steps: readonly KernelModuleStep[]): Promise<KernelModulesApplied> {
    const managed = await this.#managed();
    const failures: Record<string, string> = {};
    for (const s of steps) {
      if (!isModuleName(s.name)) throw new RangeError(`module ${JSON.stringify(s.name)} is not a module name`);
      const loaded = await this.#loaded();
      if (s.op === "load") {
        if (s.options !== undefined && !isModuleOptions(s.options)) {
          throw new RangeError(`module ${s.name}: options ${JSON.stringify(s.options)} are not key=value tokens`);
        }
        const loadedByBcd = managed.get(s.name)?.loadedByBcd ?? !loaded.has(s.name);
        managed.set(s.name, { name: s.name, ...(s.options !== undefined ? { options: s.options } : {}), loadedByBcd });
        await this.#write(managed);
        if (loaded.has(s.name)) continue;
        const err = await this.#modprobe(["--", s.name, ...(s.options?.split(" ") ?? [])]);
        if (err !== undefined) failures[s.name] = err;
        continue;
      }
      if (s.unload && loaded.has(s.name)) {
        const err = await this.#modprobe(["-r", "--", s.name]);
        if (err !== undefined) {
          failures[s.name] = err;
          continue;
        }
      }
      managed.delete(s.name);
      await this.#write(managed);
    }
    return { loaded: [...await this.#loaded()].sort(), failures };
  }
}
