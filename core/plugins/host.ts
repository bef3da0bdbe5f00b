/**
 * Hosts driver plugins (`core/plugins/README.md`): each plugin is `<dir>/<name>/manifest.json` and the executable it
 * names beside it. bcd starts a plugin on its first call as its own process (its own stdio, an environment of
 * `PATH` and `BCD_PLUGIN_PROTOCOL` only, the agent's user), says hello and waits for the plugin's, then multiplexes
 * requests over stdin/stdout by id. A plugin that:
 *
 * - picks a protocol bcd does not speak, names itself otherwise, or breaks a frame (not JSON, an unknown type, an
 *   answer to an id not asked, a line over {@link MAX_FRAME}: an output flood) is killed, `plugin-protocol`;
 * - does not answer a request within its manifest's `invokeMs` (or its hello within `handshakeMs`) is killed,
 *   `plugin-timeout`;
 * - exits with requests open fails them `plugin-crashed`, with its status and the tail of its stderr;
 * - answers an `error` frame fails that request `plugin-failed` with its code and message.
 *
 * Each failure fails the calls in flight, never the agent: the process is gone, and the next call starts a fresh one.
 * A cancelled call sends `cancel`; the plugin's real answer still wins, and one that does not answer within
 * `cancelGraceMs` is killed and the call reads `cancelled`. stderr is drained as it comes (the last 4 KiB kept for
 * the crash message), so a plugin that floods it never blocks.
 *
 * @module
 */
import { boundedLines } from "../helper/line_reader.ts";
import type { Logger } from "../log/mod.ts";
import {
  decodePluginFrame,
  encodeFrame,
  isOperationName,
  isPluginName,
  MAX_FRAME,
  MAX_INPUT,
  MAX_PLUGINS,
  parseManifest,
  PLUGIN_PROTOCOLS,
  PluginError,
  type PluginManifest,
} from "./protocol.ts";

/** Options of {@link PluginHost}. */
export interface PluginHostOptions {
  /** The configured plugin directory. */
  readonly dir: string;
  /** This bcd's version, told in the hello. */
  readonly bcdVersion: string;
  readonly log: Logger;
  /** The environment a plugin starts with (default `PATH` only). */
  readonly env?: Readonly<Record<string, string>>;
  /** The longest any invoke may run whatever the manifest says (the kind's own timeout). */
  readonly maxInvokeMs?: number;
}

/** How long a crash report waits, after the exit, for the rest of stderr. */
const _STDERR_AFTER_EXIT_MS = 2_000;
const _STDERR_TAIL = 4096;

interface _Pending {
  readonly op: string;
  resolve(output: string): void;
  reject(e: PluginError): void;
}

/** One running plugin process. */
class _Process {
  readonly #m: PluginManifest;
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #pending = new Map<number, _Pending>();
  readonly #log: Logger;
  #nextId = 1;
  #stderr = "";
  #dead: PluginError | undefined;
  #hello: { resolve(): void; reject(e: PluginError): void } | undefined;
  readonly exited: Promise<void>;
  readonly ready: Promise<void>;

  constructor(m: PluginManifest, path: string, env: Readonly<Record<string, string>>, log: Logger) {
    this.#m = m;
    this.#log = log;
    this.#child = new Deno.Command(path, {
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      clearEnv: true,
      env: { ...env, BCD_PLUGIN_PROTOCOL: String(m.protocol) },
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    this.ready = new Promise<void>((resolve, reject) => this.#hello = { resolve, reject });
    // observed by start(); a process that dies first must not leave an unhandled rejection behind
    this.ready.catch((e) => {
      if (!(e instanceof PluginError)) throw e;
    });
    const drained = this.#drainStderr();
    void this.#readFrames();
    // The crash report carries the stderr written before the exit: the status can resolve before the last of it was
    // read, so wait for the pipe's end — bounded, since a child the plugin left behind may hold the pipe open.
    this.exited = this.#child.status.then(async (s) => {
      let grace: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([drained, new Promise<void>((r) => grace = setTimeout(r, _STDERR_AFTER_EXIT_MS))]);
      clearTimeout(grace);
      this.#fail(
        new PluginError(
          "plugin-crashed",
          `plugin ${m.name} exited (${s.signal ? `signal ${s.signal}` : `status ${s.code}`})` +
            (this.#stderr.trim() ? `: ${this.#stderr.trim().split("\n").slice(-5).join(" | ")}` : ""),
        ),
      );
    });
  }

  get name(): string {
    return this.#m.name;
  }

  get dead(): boolean {
    return this.#dead !== undefined;
  }

  /** Requests sent and not yet answered. */
  get inFlight(): number {
    return this.#pending.size;
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

  async #readFrames(): Promise<void> {
    try {
      for await (const ev of boundedLines(this.#child.stdout, MAX_FRAME)) {
        if (ev.kind === "too-long") {
          return this.kill(
            new PluginError("plugin-protocol", `plugin ${this.#m.name} wrote a frame over ${MAX_FRAME} bytes`),
          );
        }
        if (ev.kind === "not-utf8") {
          return this.kill(
            new PluginError("plugin-protocol", `plugin ${this.#m.name} wrote a frame that is not UTF-8`),
          );
        }
        if (ev.line.trim() === "") continue;
        this.#frame(ev.line);
        if (this.#dead) return;
      }
    } catch (e) {
      if (!(e instanceof Error)) throw e; // the pipe closed under a kill
    }
  }

  #frame(line: string): void {
    let f;
    try {
      f = decodePluginFrame(line);
    } catch (e) {
      if (!(e instanceof TypeError)) throw e;
      return this.kill(new PluginError("plugin-protocol", `plugin ${this.#m.name}: ${e.message}`, { cause: e }));
    }
    if (f.t === "hello") {
      const h = this.#hello;
      if (!h) return this.kill(new PluginError("plugin-protocol", `plugin ${this.#m.name} said hello twice`));
      if (!PLUGIN_PROTOCOLS.includes(f.protocol)) {
        return this.kill(
          new PluginError(
            "plugin-protocol",
            `plugin ${this.#m.name} speaks protocol ${f.protocol}; this bcd speaks ${PLUGIN_PROTOCOLS.join(", ")}`,
          ),
        );
      }
      if (f.name !== this.#m.name) {
        return this.kill(new PluginError("plugin-protocol", `plugin ${this.#m.name} says it is ${f.name}`));
      }
      this.#hello = undefined;
      return h.resolve();
    }
    const p = this.#pending.get(f.id);
    if (this.#hello || !p) {
      return this.kill(
        new PluginError("plugin-protocol", `plugin ${this.#m.name} answered request ${f.id}, not asked`),
      );
    }
    this.#pending.delete(f.id);
    if (f.t === "result") p.resolve(f.output);
    else {
      p.reject(
        new PluginError(
          f.code === "cancelled" ? "cancelled" : "plugin-failed",
          `plugin ${this.#m.name} ${p.op}: ${f.code}: ${f.message}`,
        ),
      );
    }
  }

  #fail(e: PluginError): void {
    if (this.#dead) return;
    this.#dead = e;
    this.#hello?.reject(e);
    this.#hello = undefined;
    for (const p of this.#pending.values()) p.reject(e);
    this.#pending.clear();
  }

  /** Kills the process; every call in flight fails with `why`. */
  kill(why: PluginError): void {
    this.#log.warn({ plugin: this.#m.name, reason: why.reason, err: why.message }, "plugin: killed");
    this.#fail(why);
    try {
      this.#child.kill("SIGKILL");
    } catch (e) {
      if (!(e instanceof TypeError)) throw e; // already exited
    }
  }

  async #write(line: string): Promise<void> {
    try {
      await this.#writer.write(new TextEncoder().encode(line));
    } catch (e) {
      if (!(e instanceof Error)) throw e;
      // the process went away; its exit fails the call
    }
  }

  /** Says hello and waits for the plugin's, at most `handshakeMs`. */
  async start(bcdVersion: string): Promise<void> {
    await this.#write(encodeFrame({ t: "hello", protocols: PLUGIN_PROTOCOLS, bcd: bcdVersion }));
    const t = setTimeout(
      () =>
        this.kill(
          new PluginError(
            "plugin-timeout",
            `plugin ${this.#m.name} did not say hello within ${this.#m.timeouts.handshakeMs} ms`,
          ),
        ),
      this.#m.timeouts.handshakeMs,
    );
    try {
      await this.ready;
    } finally {
      clearTimeout(t);
    }
  }

  /** One request; rejects with a {@link PluginError}. */
  invoke(op: string, input: string, timeoutMs: number, signal: AbortSignal): Promise<string> {
    if (this.#dead) return Promise.reject(this.#dead);
    const id = this.#nextId++;
    return new Promise<string>((resolve, reject) => {
      let grace: ReturnType<typeof setTimeout> | undefined;
      const done = () => {
        clearTimeout(timer);
        clearTimeout(grace);
        signal.removeEventListener("abort", onAbort);
      };
      const timer = setTimeout(() => {
        this.kill(
          new PluginError(
            "plugin-timeout",
            `plugin ${this.#m.name} ${op} did not answer within ${timeoutMs} ms; killed`,
          ),
        );
      }, timeoutMs);
      const onAbort = () => {
        void this.#write(encodeFrame({ t: "cancel", id }));
        grace = setTimeout(() => {
          if (!this.#pending.has(id)) return;
          const p = this.#pending.get(id)!;
          this.#pending.delete(id);
          p.reject(new PluginError("cancelled", `plugin ${this.#m.name} ${op} cancelled; killed after its grace`));
          this.kill(new PluginError("plugin-crashed", `plugin ${this.#m.name} was killed: it ignored a cancel`));
        }, this.#m.timeouts.cancelGraceMs);
      };
      this.#pending.set(id, {
        op,
        resolve: (o) => (done(), resolve(o)),
        reject: (e) => (done(), reject(e)),
      });
      void this.#write(encodeFrame({ t: "invoke", id, op, input }));
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}

/** The plugins of one directory, each started on demand. */
export class PluginHost {
  readonly #o: PluginHostOptions;
  readonly #running = new Map<string, _Process>();
  readonly #starting = new Map<string, Promise<_Process>>();

  constructor(opts: PluginHostOptions) {
    this.#o = opts;
  }

  /** The manifest of `name`; `unknown-plugin` when there is none, `plugin-protocol` when it is not one. */
  async manifest(name: string): Promise<PluginManifest> {
    if (!isPluginName(name)) throw new PluginError("unknown-plugin", `${JSON.stringify(name)} is not a plugin name`);
    let text: string;
    try {
      const f = await Deno.open(`${this.#o.dir}/${name}/manifest.json`);
      try {
        const buf = new Uint8Array(64 * 1024 + 1);
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

  /** The manifests of every plugin in the directory (those that parse; each other one logged). */
  async list(): Promise<PluginManifest[]> {
    const out: PluginManifest[] = [];
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
    for (const n of names) {
      try {
        out.push(await this.manifest(n));
      } catch (e) {
        if (!(e instanceof PluginError)) throw e;
        this.#o.log.warn({ plugin: n, err: e.message }, "plugin: skipped");
      }
    }
    return out;
  }

  async #process(m: PluginManifest): Promise<_Process> {
    const live = this.#running.get(m.name);
    if (live && !live.dead) return live;
    const pending = this.#starting.get(m.name);
    if (pending) return pending;
    const start = (async () => {
      if (!PLUGIN_PROTOCOLS.includes(m.protocol)) {
        throw new PluginError(
          "plugin-protocol",
          `plugin ${m.name} speaks protocol ${m.protocol}; this bcd speaks ${PLUGIN_PROTOCOLS.join(", ")}`,
        );
      }
      let p: _Process;
      try {
        p = new _Process(
          m,
          `${this.#o.dir}/${m.name}/${m.executable}`,
          this.#o.env ?? { PATH: "/usr/bin:/bin" },
          this.#o.log,
        );
      } catch (e) {
        if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.PermissionDenied) {
          throw new PluginError("plugin-crashed", `plugin ${m.name} cannot start: ${(e as Error).message}`, {
            cause: e,
          });
        }
        throw e;
      }
      this.#running.set(m.name, p);
      await p.start(this.#o.bcdVersion);
      this.#o.log.info({ plugin: m.name, version: m.version }, "plugin: started");
      return p;
    })();
    this.#starting.set(m.name, start);
    try {
      return await start;
    } finally {
      this.#starting.delete(m.name);
    }
  }

  /**
   * Calls `operation` of `plugin` with `input`; resolves with its output. Rejects with a {@link PluginError} whose
   * reason is the command's failure reason.
   */
  async invoke(plugin: string, operation: string, input: string, signal: AbortSignal): Promise<string> {
    const m = await this.manifest(plugin);
    if (!isOperationName(operation) || !m.operations.includes(operation)) {
      throw new PluginError(
        "unknown-operation",
        `plugin ${plugin} serves no operation ${JSON.stringify(operation)} (it serves ${m.operations.join(", ")})`,
      );
    }
    if (input.length > MAX_INPUT) throw new PluginError("plugin-failed", `input is over ${MAX_INPUT} bytes`);
    if (signal.aborted) throw new PluginError("cancelled", `plugin ${plugin} ${operation} cancelled before it ran`);
    const p = await this.#process(m);
    const timeout = Math.min(m.timeouts.invokeMs, this.#o.maxInvokeMs ?? m.timeouts.invokeMs);
    return await p.invoke(operation, input, timeout, signal);
  }

  /** How many requests the plugin's process has in flight now (0 when it is not running). */
  inFlight(plugin: string): number {
    const p = this.#running.get(plugin);
    return p && !p.dead ? p.inFlight : 0;
  }

  /** Kills every plugin process and waits for them to go. */
  async close(): Promise<void> {
    const all = [...this.#running.values()];
    this.#running.clear();
    for (const p of all) if (!p.dead) p.kill(new PluginError("plugin-crashed", `plugin ${p.name}: bcd is stopping`));
    await Promise.all(all.map((p) => p.exited));
  }
}
