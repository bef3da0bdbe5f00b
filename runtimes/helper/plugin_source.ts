/**
 * The agents' {@link PluginSource} over the root helper: manifests through `plugin.manifest` and `plugin.list`, and
 * each plugin process through a connection of its own whose first request is `plugin.attach` — the helper starts the
 * plugin from its configured directory under the plugins' user and relays its frames (`./plugin_relay.ts`). The agent
 * never names a path nor runs a program: the scoped node, site and ramdisk hold `--allow-run` for no plugin.
 *
 * The relayed process ends with the helper's `{"t":"exit",…}` line (its status, stderr tail, and why the helper
 * killed it, if it did); a connection that ends without one reads as a crash. Killing the process is closing the
 * connection: the helper kills the plugin when its connection goes.
 *
 * @module
 */
import { answerError, boundedLines, decodeAnswer, encodeRequest, type LineEvent } from "../../core/helper/mod.ts";
import {
  decodeExit,
  MAX_FRAME,
  type PluginChannel,
  PluginError,
  type PluginExit,
  type PluginManifest,
  type PluginSource,
} from "../../core/plugins/mod.ts";
import type { HelperClient } from "./client.ts";
import { listHelperPlugins } from "./plugin_list.ts";

/** One relayed plugin process. */
class _RelayChannel implements PluginChannel {
  readonly lines: AsyncIterable<LineEvent>;
  readonly exited: Promise<PluginExit>;
  readonly #conn: Deno.Conn;
  #settle!: (x: PluginExit) => void;
  #closed = false;

  constructor(conn: Deno.Conn, rest: AsyncIterator<LineEvent>) {
    this.#conn = conn;
    this.exited = new Promise<PluginExit>((r) => this.#settle = r);
    this.lines = { [Symbol.asyncIterator]: () => this.#frames(rest) };
  }

  /** The relayed lines up to the helper's exit line, which settles {@link exited} instead. */
  async *#frames(rest: AsyncIterator<LineEvent>): AsyncGenerator<LineEvent> {
    try {
      while (true) {
        const n = await rest.next();
        if (n.done) break;
        const ev = n.value;
        if (ev.kind === "line") {
          const exit = _exitOf(ev.line);
          if (exit) return this.#settle(exit);
        }
        yield ev;
      }
    } catch (e) {
      if (!(e instanceof Error)) throw e; // the connection closed under a kill
    } finally {
      this.#close();
      this.#settle({
        code: null,
        signal: null,
        stderr: "",
        failure: { reason: "plugin-crashed", message: "the helper's plugin relay closed" },
      });
    }
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#conn.close();
    } catch (e) {
      if (!(e instanceof Deno.errors.BadResource)) throw e;
    }
  }

  async write(line: string): Promise<void> {
    if (this.#closed) return;
    try {
      const b = new TextEncoder().encode(line);
      let n = 0;
      while (n < b.length) n += await this.#conn.write(b.subarray(n));
    } catch (e) {
      if (!(e instanceof Error)) throw e; // the relay went away; its end fails the calls
    }
  }

  kill(): void {
    this.#close();
    this.#settle({ code: null, signal: "SIGKILL", stderr: "" });
  }
}

function _exitOf(line: string): PluginExit | undefined {
  try {
    return decodeExit(line);
  } catch (e) {
    if (e instanceof TypeError || e instanceof SyntaxError) {
      return {
        code: null,
        signal: null,
        stderr: "",
        failure: { reason: "plugin-crashed", message: `the helper's exit line is not one: ${e.message}` },
      };
    }
    throw e;
  }
}

/** Plugins through the helper at `client.socket`. */
export class HelperPluginSource implements PluginSource {
  constructor(readonly client: HelperClient) {}

  async manifest(name: string): Promise<PluginManifest> {
    const r = await this.client.call("plugin.manifest", { name });
    if ("refused" in r) throw new PluginError(r.refused.reason, r.refused.message);
    return r.manifest;
  }

  list(): Promise<PluginManifest[]> {
    return listHelperPlugins(this.client);
  }

  async launch(m: PluginManifest): Promise<PluginChannel> {
    let conn: Deno.Conn;
    try {
      conn = await Deno.connect({ transport: "unix", path: this.client.socket });
    } catch (e) {
      if (!(e instanceof Error)) throw e;
      throw new PluginError(
        "plugin-crashed",
        `plugin ${m.name} cannot start: the helper is unreachable: ${e.message}`,
        {
          cause: e,
        },
      );
    }
    const rest = boundedLines(conn.readable, MAX_FRAME)[Symbol.asyncIterator]();
    const fail = (why: string): never => {
      try {
        conn.close();
      } catch (e) {
        if (!(e instanceof Deno.errors.BadResource)) throw e;
      }
      throw new PluginError("plugin-crashed", `plugin ${m.name} cannot start: ${why}`);
    };
    try {
      const req = new TextEncoder().encode(encodeRequest(1, "plugin.attach", { name: m.name }));
      let n = 0;
      while (n < req.length) n += await conn.write(req.subarray(n));
    } catch (e) {
      if (!(e instanceof Error)) throw e;
      return fail(`the helper went away: ${e.message}`);
    }
    const first = await rest.next();
    if (first.done || first.value.kind !== "line") return fail("the helper closed the connection");
    const a = decodeAnswer(first.value.line);
    if (!a.ok) return fail(answerError(a).message);
    const r = a.result as { attached?: unknown; refused?: { reason: PluginError["reason"]; message: string } };
    if (r.refused) {
      conn.close();
      throw new PluginError(r.refused.reason, r.refused.message);
    }
    return new _RelayChannel(conn, rest);
  }
}
