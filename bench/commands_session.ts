/**
 * `bench:commands` through the session's frame handling: the node agent takes gateway frames one at a time, as the
 * session client hands them over (`NodeAgent.frame`, awaited before the next frame is read), and 8 gateway-side
 * clients each send their next signed `Command` frame when their previous result arrives. This is the path a
 * command takes in production; the dispatcher-only rounds of `commands_bench.ts` skip it, and so missed that the
 * session waited for each command's `ACKED` before reading the next frame (one WAL sync per `accepted`).
 *
 * The node's side of each frame is timed as the session client (`core/session/client.ts`) does it: the gateway's
 * frame bytes decoded (`decodeGatewayFrame`), handed to the agent, and every frame the agent sends encoded
 * (`encodeNodeFrame`). The gateway's side (encoding the commands, reading the state of an update) is kept out of the
 * node's figures: frames are encoded before the round, and updates are read from the frame object the agent sent.
 * The WebSocket under it is not in the figures.
 *
 * @module
 */
import { bcd, decodeGatewayFrame, encodeGatewayFrame, encodeMessage, encodeNodeFrame } from "../proto/mod.ts";
import type { HandlerRegistry } from "../core/commands/handlers.ts";
import { loadAgentConfig } from "../core/config/mod.ts";
import { Journal } from "../core/journal/mod.ts";
import { silentLogger } from "../core/log/mod.ts";
import { generateSigningKeyPair } from "../core/pki/ed25519.ts";
import type { TestPki } from "../core/pki/pki_testing.ts";
import type { SessionOut } from "../core/session/client.ts";
import { NodeAgent } from "../core/session/node_agent.ts";
import { threadClock } from "./commands_stages.ts";

/** One round through the session. */
export interface SessionRound {
  readonly ackedP50: number;
  readonly rate: number;
  /** Group commits per settled command: 0.25 when 8 commands' two writes share every commit. */
  readonly commitsPerCommand: number;
  /** The event loop's CPU per settled command, µs (`threadClock`). */
  readonly loopUs: number;
}

/** A node agent fed frames one at a time; {@link SessionBench.round} runs 8 closed-loop clients over it. */
export class SessionBench {
  readonly #agent: NodeAgent;
  readonly #journal: Journal;
  /** When each command's ACKED arrived, and what to call when its result does, by command id. */
  readonly #acked = new Map<string, number>();
  readonly #done = new Map<string, () => void>();
  readonly #out: SessionOut;
  /** Gateway frames as bytes, read one at a time. */
  readonly #queue: Uint8Array[] = [];
  #wake: (() => void) | null = null;
  #reading: Promise<void> = Promise.resolve();
  #stopped = false;

  private constructor(agent: NodeAgent, journal: Journal) {
    this.#agent = agent;
    this.#journal = journal;
    this.#out = {
      epoch: 1,
      send: (f) => {
        encodeNodeFrame(f); // the session client's work for every frame it sends
        const u = f.command_update;
        if (!u) return true;
        if (u.state === bcd.v1.CommandUpdate.State.ACKED) this.#acked.set(u.command_id ?? "", performance.now());
        else if (u.state !== bcd.v1.CommandUpdate.State.RUNNING) this.#done.get(u.command_id ?? "")?.();
        return true;
      },
    };
  }

  /** The agent's journal (`<dir>/session`). */
  get journal(): Journal {
    return this.#journal;
  }

  /** A node agent on its own journal in `dir`, trusting `pki`'s command-signing roots. */
  static async open(dir: string, nodeId: string, pki: TestPki, handlers: HandlerRegistry): Promise<SessionBench> {
    const journal = await Journal.open({ dataDir: `${dir}/session`, bootId: "bench-boot", nodeId });
    const trustBundle = encodeMessage(bcd.v1.TrustBundle, {
      command_signing_roots: pki.bundle.commandSigningRoots.map((k) => ({ public_key: k })),
    });
    const agent = await NodeAgent.start({
      role: "node",
      identity: { nodeId, key: await generateSigningKeyPair(), certChain: [], trustBundle, gatewayUrl: "" },
      journal,
      config: loadAgentConfig(""),
      handlers,
      log: silentLogger(),
    });
    const b = new SessionBench(agent, journal);
    await agent.established(b.#out);
    b.#reading = b.#read();
    return b;
  }

  /** The session's reader: one frame at a time, decoded and handled before the next is read. */
  async #read(): Promise<void> {
    while (!this.#stopped) {
      const bytes = this.#queue.shift();
      if (bytes === undefined) {
        await new Promise<void>((r) => this.#wake = r);
        continue;
      }
      await this.#agent.frame(decodeGatewayFrame(bytes), this.#out);
    }
  }

  #push(f: Uint8Array): void {
    this.#queue.push(f);
    this.#wake?.();
    this.#wake = null;
  }

  /** 8 clients over `commands` (wire `Command`s, signed), each sending its next when its result arrived. */
  async round(commands: readonly Uint8Array[]): Promise<SessionRound> {
    // The gateway's work, before the round: each command as the bytes of its frame, and its id.
    const frames = commands.map((c) => {
      const command = bcd.v1.Command.decode(c);
      return { bytes: encodeGatewayFrame({ command }), id: bcd.v1.CommandBody.decode(command.body).id };
    });
    const latencies: number[] = [];
    let next = 0;
    const client = async () => {
      while (next < frames.length) {
        const { bytes, id } = frames[next++]!;
        const done = new Promise<void>((r) => this.#done.set(id, r));
        const t0 = performance.now();
        this.#push(bytes);
        await done;
        const a = this.#acked.get(id);
        if (a === undefined) throw new Error(`command ${id} settled without ACKED`);
        latencies.push(a - t0);
      }
    };
    const c0 = this.#journal.stats.commits;
    const t0 = performance.now();
    const loop0 = threadClock();
    await Promise.all(Array.from({ length: 8 }, client));
    const loop1 = threadClock();
    const seconds = (performance.now() - t0) / 1000;
    latencies.sort((a, b) => a - b);
    return {
      ackedP50: latencies[latencies.length >> 1]!,
      rate: frames.length / seconds,
      commitsPerCommand: (this.#journal.stats.commits - c0) / frames.length,
      loopUs: (loop1.cpu - loop0.cpu) / frames.length,
    };
  }

  async close(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#reading;
    await this.#agent.stop();
    await this.#journal.close();
  }
}
