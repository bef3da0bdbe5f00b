/**
 * Where plugins come from and how their processes are reached: a {@link PluginSource} gives manifests and launches a
 * plugin's process as a {@link PluginChannel} (its frames in, its frames out, its end). {@link DirPluginSource} reads
 * `<dir>/<name>/manifest.json` and spawns `<dir>/<name>/<executable>` itself — with a cleared environment, no open
 * descriptor but its three pipes (a fixed `bash -c` prologue closes every other one this process may have inherited
 * without close-on-exec: Deno has no close-fds option) and, when given an identity, through util-linux `setpriv` as
 * that uid and gid with no supplementary groups, no capabilities and `no_new_privs`. The root helper runs it; the scoped agents reach the same plugins through the helper's relay
 * (`runtimes/helper/plugin_source.ts`), since Deno cannot grant `--allow-run` of files inside a directory.
 *
 * @module
 */
import { boundedLines, type LineEvent } from "../bounded_lines.ts";
import { setprivDrop } from "../setpriv.ts";
import {
  isPluginName,
  MAX_FRAME,
  MAX_MANIFEST,
  MAX_PLUGINS,
  parseManifest,
  PluginError,
  type PluginExit,
  type PluginManifest,
} from "./protocol.ts";

/** A running plugin process as its host sees it. */
export interface PluginChannel {
  /** The plugin's stdout, line by line, each bounded by `MAX_FRAME`. */
  readonly lines: AsyncIterable<LineEvent>;
  /** Writes one frame line to its stdin; a process that went away is not an error here (its end is). */
  write(line: string): Promise<void>;
  /** Resolves once the process is gone. */
  readonly exited: Promise<PluginExit>;
  /** Kills it (SIGKILL); `exited` resolves after. */
  kill(): void;
}

/** Manifests and processes of one plugin directory. */
export interface PluginSource {
  /** The manifest of `name`: `unknown-plugin` when there is none, `plugin-protocol` when it is not one. */
  manifest(name: string): Promise<PluginManifest>;
  /** Every plugin's manifest that parses (the others are skipped). */
  list(): Promise<PluginManifest[]>;
  /** Starts `m`'s process; `plugin-crashed` when it cannot start. */
  launch(m: PluginManifest): Promise<PluginChannel>;
}

/** The uid and gid a plugin runs as. */
export interface PluginIdentity {
  readonly uid: number;
  readonly gid: number;
}

/** Options of {@link DirPluginSource}. */
export interface DirPluginSourceOptions {
  readonly dir: string;
  /** The environment a plugin starts with (default `PATH` only); `BCD_PLUGIN_PROTOCOL` is added. */
  readonly env?: Readonly<Record<string, string>>;
  /** Run each plugin as this uid/gid (never 0) through `setpriv`; unset: as this process's user. */
  readonly identity?: PluginIdentity;
  /** `setpriv` (default on `PATH`). */
  readonly setpriv?: string;
  /** `bash` (default on `PATH`), which runs the fixed prologue that closes inherited descriptors. */
  readonly bash?: string;
}

/** Closes every descriptor above 2, then execs its arguments (`$0` is a name; the program comes as `$@`). */
export const CLOSE_FDS_PROLOGUE =
  'for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-" 2>/dev/null; done; exec "$@"';

const _STDERR_TAIL = 4096;
/** How long a crash report waits, after the exit, for the rest of stderr. */
const _STDERR_AFTER_EXIT_MS = 2_000;

/** The argv that drops to `id` before exec'ing `path` (util-linux `setpriv`). */
export function dropArgv(id: PluginIdentity, path: string): string[] {
  if (!Number.isSafeInteger(id.uid) || id.uid <= 0 || id.uid > 0xfffffffe) {
    throw new RangeError(`plugin uid ${id.uid}: a plugin never runs as root`);
  }
  if (!Number.isSafeInteger(id.gid) || id.gid <= 0 || id.gid > 0xfffffffe) {
    throw new RangeError(`plugin gid ${id.gid}: a plugin never runs in group root`);
  }
  return [...setprivDrop(id.uid, id.gid), "--", path];
}

/** A process this side spawned, as a {@link PluginChannel}. */
class _LocalChannel implements PluginChannel {
  readonly lines: AsyncIterable<LineEvent>;
  readonly exited: Promise<PluginExit>;
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  #stderr = "";

  constructor(child: Deno.ChildProcess) {
    this.#child = child;
    this.#writer = child.stdin.getWriter();
    this.lines = boundedLines(child.stdout, MAX_FRAME);
    const drained = this.#drainStderr();
    // The crash report carries the stderr written before the exit: the status can resolve before the last of it was
    // read, so wait for the pipe's end — bounded, since a child the plugin left behind may hold the pipe open.
    this.exited = child.status.then(async (s) => {
      let grace: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([drained, new Promise<void>((r) => grace = setTimeout(r, _STDERR_AFTER_EXIT_MS))]);
      clearTimeout(grace);
      return { code: s.signal ? null : s.code, signal: s.signal ?? null, stderr: this.#stderr };
    });
  }

  async #drainStderr(): Promise<void> {
    const dec = new TextDecoder();
    try {
      for await (const c of this.#child.stderr) {
        this.#stderr = (this.#stderr + dec.decode(c, { stream: true })).slice(-_STDERR_TAIL);
      }
    } catch (e) {
      if (!(e instanceof Error)) throw e; // the pipe closed under a kill
    }
  }

  async write(line: string): Promise<void> {
    try {
      await this.#writer.write(new TextEncoder().encode(line));
    } catch (e) {
      if (!(e instanceof Error)) throw e; // the process went away; its end fails the calls
    }
  }

  kill(): void {
    try {
      this.#child.kill("SIGKILL");
    } catch (e) {
      if (!(e instanceof TypeError)) throw e; // already exited
    }
  }
}

/** The plugins of a directory this process reads and starts itself. */
export class DirPluginSource implements PluginSource {
  readonly #o: DirPluginSourceOptions;
  constructor(opts: DirPluginSourceOptions) {
    this.#o = opts;
  }

  get dir(): string {
    return this.#o.dir;
  }

  async manifest(name: string): Promise<PluginManifest> {
    if (!isPluginName(name)) throw new PluginError("unknown-plugin", `${JSON.stringify(name)} is not a plugin name`);
    let text: string;
    try {
      const f = await Deno.open(`${this.#o.dir}/${name}/manifest.json`);
      try {
        const buf = new Uint8Array(MAX_MANIFEST + 1);
        let n = 0;
        while (n < buf.length) {
          const r = await f.read(buf.subarray(n));
          if (r === null) break;
          n += r;
        }
        text = new TextDecoder().decode(buf.subarray(0, n));
      } finally {
        f.close();
      }
    } catch (e) {
      if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) {
        throw new PluginError("unknown-plugin", `no plugin ${name} in ${this.#o.dir}`, { cause: e });
      }
      throw e;
    }
    try {
      return parseManifest(text, name);
    } catch (e) {
      if (!(e instanceof TypeError)) throw e;
      throw new PluginError("plugin-protocol", `plugin ${name}'s manifest: ${e.message}`, { cause: e });
    }
  }

  async list(): Promise<PluginManifest[]> {
    let names: string[] = [];
    try {
      for await (const e of Deno.readDir(this.#o.dir)) {
        if (e.isDirectory && isPluginName(e.name)) names.push(e.name);
        if (names.length > MAX_PLUGINS) break;
      }
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return [];
      throw e;
    }
    names = names.sort().slice(0, MAX_PLUGINS);
    const out: PluginManifest[] = [];
    for (const n of names) {
      try {
        out.push(await this.manifest(n));
      } catch (e) {
        if (!(e instanceof PluginError)) throw e; // a plugin that is not one is skipped
      }
    }
    return out;
  }

  launch(m: PluginManifest): Promise<PluginChannel> {
    const path = `${this.#o.dir}/${m.name}/${m.executable}`;
    const id = this.#o.identity;
    try {
      const run = id ? [this.#o.setpriv ?? "setpriv", ...dropArgv(id, path)] : [path];
      const child = new Deno.Command(this.#o.bash ?? "bash", {
        args: ["-c", CLOSE_FDS_PROLOGUE, "bcd-plugin", ...run],
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
        clearEnv: true,
        env: { ...(this.#o.env ?? { PATH: "/usr/bin:/bin" }), BCD_PLUGIN_PROTOCOL: String(m.protocol) },
      }).spawn();
      return Promise.resolve(new _LocalChannel(child));
    } catch (e) {
      if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.PermissionDenied) {
        return Promise.reject(
          new PluginError("plugin-crashed", `plugin ${m.name} cannot start: ${(e as Error).message}`, { cause: e }),
        );
      }
      return Promise.reject(e);
    }
  }
}
