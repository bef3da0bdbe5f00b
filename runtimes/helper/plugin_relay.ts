/**
 * The helper's plugin relay: a connection whose first request is `plugin.attach {name}` becomes that plugin's stdio.
 * The helper starts the plugin itself (`DirPluginSource` over its configured directory: the manifest checked, the
 * path built here, the plugins' own uid and gid through `setpriv`, a cleared environment, no descriptor but the three
 * pipes), answers the attach, and from then on:
 *
 * | direction       | each line                                                                 | a line refused               |
 * | --------------- | ------------------------------------------------------------------------- | ---------------------------- |
 * | agent → plugin  | checked as a host frame (`hello`, `invoke`, `cancel`; ≤ 1 MiB), written to its stdin | plugin killed, `plugin-protocol` |
 * | plugin → agent  | checked as a plugin frame (`hello`, `result`, `error`; ≤ 1 MiB), sent on  | plugin killed, `plugin-protocol` |
 *
 * The plugin's stdout is read only while the agent has at most {@link MAX_UNSENT_ANSWER_BYTES} unread (the plugin
 * blocks on a full pipe, never the helper's memory). When the plugin ends, the last line is `{"t":"exit",…}` (its
 * status, the tail of its stderr, and why the helper killed it, if it did) — a type no plugin frame may have — and
 * the connection closes. When the agent closes the connection, the plugin is killed.
 *
 * @module
 */
import type { Logger } from "../../core/log/mod.ts";
import {
  decodeHostFrame,
  decodePluginFrame,
  encodeExit,
  MAX_FRAME,
  type PluginChannel,
  type PluginExit,
  type PluginFailure,
} from "../../core/plugins/mod.ts";
import { MAX_UNSENT_ANSWER_BYTES, type Peer } from "./peer.ts";

/** The most plugin processes one helper relays at once (each holds a connection of the helper's 16). */
export const MAX_PLUGIN_SESSIONS = 8;

/** One plugin process relayed over one connection. */
export class PluginRelay {
  readonly #ch: PluginChannel;
  readonly #peer: Peer;
  readonly #name: string;
  readonly #log: Logger;
  #failure: { reason: PluginFailure; message: string } | undefined;
  /** Resolves once the plugin ended and its exit line is queued. */
  readonly done: Promise<PluginExit>;

  constructor(ch: PluginChannel, peer: Peer, name: string, log: Logger) {
    this.#ch = ch;
    this.#peer = peer;
    this.#name = name;
    this.#log = log;
    const pumped = this.#pump();
    this.done = ch.exited.then(async (x) => {
      await pumped;
      const exit = this.#failure ? { ...x, failure: this.#failure } : x;
      peer.send(encodeExit(exit));
      this.#log.info(
        { conn: peer.id, plugin: name, code: x.code, signal: x.signal, reason: this.#failure?.reason },
        "helper: plugin ended",
      );
      peer.stopReading();
      return exit;
    });
  }

  /** Kills the plugin for `why` (the first reason given is the one the exit line carries). */
  kill(reason: PluginFailure, message: string): void {
    this.#failure ??= { reason, message };
    this.#ch.kill();
  }

  /** One line from the agent: checked, then written to the plugin's stdin. */
  async toPlugin(line: string): Promise<void> {
    try {
      decodeHostFrame(line);
    } catch (e) {
      if (!(e instanceof TypeError)) throw e;
      return this.kill("plugin-protocol", `plugin ${this.#name}: the agent sent a bad frame: ${e.message}`);
    }
    await this.#ch.write(`${line}\n`);
  }

  async #pump(): Promise<void> {
    try {
      for await (const ev of this.#ch.lines) {
        if (ev.kind === "too-long") {
          return this.kill("plugin-protocol", `plugin ${this.#name} wrote a frame over ${MAX_FRAME} bytes`);
        }
        if (ev.kind === "not-utf8") {
          return this.kill("plugin-protocol", `plugin ${this.#name} wrote a frame that is not UTF-8`);
        }
        if (ev.line.trim() === "") continue;
        try {
          decodePluginFrame(ev.line);
        } catch (e) {
          if (!(e instanceof TypeError)) throw e;
          return this.kill("plugin-protocol", `plugin ${this.#name}: ${e.message}`);
        }
        if (this.#peer.unsent > MAX_UNSENT_ANSWER_BYTES) await this.#peer.drained(MAX_UNSENT_ANSWER_BYTES / 2);
        if (this.#peer.dead) return this.kill("plugin-crashed", `plugin ${this.#name}: the agent went away`);
        this.#peer.send(`${ev.line}\n`);
      }
    } catch (e) {
      if (!(e instanceof Error)) throw e; // the pipe closed under a kill
    }
  }
}
