/**
 * Hosts driver plugins (`core/plugins/README.md`): each plugin is `<dir>/<name>/manifest.json` and the executable it
 * names beside it. bcd starts a plugin on its first call as its own process through its {@link PluginSource} (this
 * process, or the root helper under the plugins' own user, relaying its stdio), says hello and waits for the plugin's,
 * then multiplexes requests over its stdin/stdout by id. A plugin that:
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
import type { Logger } from "../log/mod.ts";
import {
  decodePluginFrame,
  encodeFrame,
  isOperationName,
  MAX_FRAME,
  MAX_INPUT,
  PLUGIN_PROTOCOLS,
  PluginError,
  type PluginManifest,
} from "./protocol.ts";
import { DirPluginSource, type PluginChannel, type PluginSource } from "./source.ts";

/** Options of {@link PluginHost}. */
export interface PluginHostOptions {
  /** Where plugins come from: a directory this process starts them from, or the helper's relay. */
  readonly source?: PluginSource;
  /** The configured plugin directory, started from by this process (a {@link DirPluginSource}) when no source. */
  readonly dir?: string;
  /** This bcd's version, told in the hello. */
  readonly bcdVersion: string;
  readonly log: Logger;
  /** The environment a plugin starts with (default `PATH` only), for `dir`. */
  readonly env?: Readonly<Record<string, string>>;
  /** The longest any invoke may run whatever the manifest says (the kind's own timeout). */
  readonly maxInvokeMs?: number;
}

interface _Pending {
  readonly op: string;
  resolve(output: string): void;
  reject(e: PluginError): void;
}

/** One running plugin process. */
class _Process {
  readonly #m: PluginManifest;
  readonly #ch: PluginChannel;
  readonly #pending = new Map<number, _Pending>();
  readonly #log: Logger;
  #nextId = 1;
  #dead: PluginError | undefined;
  #hello: { resolve(): void; reject(e: PluginError): void } | undefined;
  readonly exited: Promise<void>;
  readonly ready: Promise<void>;

  constructor(m: PluginManifest, ch: PluginChannel, log: Logger) {
    this.#m = m;
    this.#ch = ch;
    this.#log = log;
    this.ready = new Promise<void>((resolve, reject) => this.#hello = { resolve, reject });
    // observed by start(); a process that dies first must not leave an unhandled rejection behind
    this.ready.catch((e) => {
      if (!(e instanceof PluginError)) throw e;
    });
    void this.#readFrames();
    this.exited = ch.exited.then((x) => {
      const tail = x.stderr.trim();
      this.#fail(
        x.failure ? new PluginError(x.failure.reason, x.failure.message) : new PluginError(
          "plugin-crashed",
          `plugin ${m.name} exited (${x.signal ? `signal ${x.signal}` : `status ${x.code}`})` +
            (tail ? `: ${tail.split("\n").slice(-5).join(" | ")}` : ""),
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

  async #readFrames(): Promise<void> {
    try {
      for await (const ev of this.#ch.lines) {
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
    this.#ch.kill();
  }

  #write(line: string): Promise<void> {
    return this.#ch.write(line);
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

/** The plugins of one source, each started on demand. */
export class PluginHost {
  readonly #o: PluginHostOptions;
  readonly #source: PluginSource;
  readonly #running = new Map<string, _Process>();
  readonly #starting = new Map<string, Promise<_Process>>();

  constructor(opts: PluginHostOptions) {
    this.#o = opts;
    if (opts.source) this.#source = opts.source;
    else if (opts.dir !== undefined) {
      this.#source = new DirPluginSource({ dir: opts.dir, ...(opts.env ? { env: opts.env } : {}) });
    } else throw new TypeError("a PluginHost needs a source or a dir");
  }

  /** The manifest of `name`; `unknown-plugin` when there is none, `plugin-protocol` when it is not one. */
  manifest(name: string): Promise<PluginManifest> {
    return this.#source.manifest(name);
  }

  /** The manifests of every plugin of the source (those that parse). */
  list(): Promise<PluginManifest[]> {
    return this.#source.list();
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
      const p = new _Process(m, await this.#source.launch(m), this.#o.log);
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
