/**
 * The worker's execution engine (seed 002 §"The worker's executions"): it routes the host's messages to runners
 * by ID and generation, admits at most 8 executions of at most 1 MiB of buffers each, remembers generations,
 * abandons and drops executions, and runs one loop that never blocks: each turn steps every execution, each
 * moving at most an eighth of the output limit, starting with another execution each turn.
 *
 * @module
 */
import type { Logger } from "../core/log/mod.ts";
import {
  BodyError,
  decodeHostMessage,
  encodeFrame,
  encodeGuestMessage,
  type ExecKey,
  type HostMessage,
} from "../core/framing/mod.ts";
import type { Clock } from "../core/clock.ts";
import { ExecHistory } from "./exec_history.ts";
import {
  DROP_WAIT_MS,
  executionMemory,
  MAX_EXECUTION_MEMORY,
  MAX_EXECUTIONS,
  OUTPUT_QUEUE_LIMIT,
  TURN_BUDGET,
} from "./exec_limits.ts";
import { ExecRunner } from "./exec_runner.ts";
import { ERRNO, type ExecIdentity, launchProblem, spawnInGroup } from "./process_group.ts";

/** A message about an execution that ends the worker's session. */
export class SessionError extends Error {
  override name = "SessionError";
}

/** What the engine needs of the worker. */
export interface EngineHost {
  readonly clock: Pick<Clock, "monotonic" | "setTimer">;
  readonly log: Logger;
  /** Queues a whole message for the host. */
  emit(frame: Uint8Array): void;
  /** Bytes waiting for the stream to the host. */
  queued(): number;
  /** Spawns a program in a group of its own (tests may wrap it). */
  spawn?(argv: readonly string[], stdin: boolean, identity?: ExecIdentity): Deno.ChildProcess;
  /** Who executions run as (non-root, no capabilities); unset: as the agent itself. */
  readonly identity?: ExecIdentity;
}

/** The engine of one worker. */
export class ExecEngine {
  readonly history = new ExecHistory();
  /** Runners attached to the host, by ID. */
  readonly #active = new Map<bigint, ExecRunner>();
  /** Runners detached from the host whose programs the worker still holds. */
  readonly #background = new Set<ExecRunner>();
  #scheduled = false;
  #timer: { cancel(): void } | null = null;
  #timerAt = Infinity;
  #lastServed: ExecRunner | null = null;
  #closed = false;

  constructor(readonly host: EngineHost) {}

  /** Executions attached to the host (a probe is refused while any runs). */
  get running(): number {
    return this.#active.size;
  }

  /** Every execution the limit counts: attached, abandoned, and programs whose status is not collected. */
  get count(): number {
    return this.#active.size + this.#background.size;
  }

  /** Asks for a turn of the loop (coalesced). */
  wake = (): void => {
    if (this.#scheduled || this.#closed) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      this.pump();
    });
  };

  #runnerHost() {
    return {
      clock: this.host.clock,
      emit: (f: Uint8Array) => this.host.emit(f),
      outputRoom: () => this.host.queued() <= OUTPUT_QUEUE_LIMIT,
      wake: this.wake,
    };
  }

  /** Takes a host message of kind 12–16; throws {@link SessionError} for one that ends the session. */
  handle(kind: number, body: Uint8Array): void {
    let m: HostMessage;
    try {
      m = decodeHostMessage(kind, body);
    } catch (e) {
      if (e instanceof BodyError) throw new SessionError(`an execution message does not decode: ${e.message}`);
      throw e;
    }
    // Give every execution a turn first: a program that ended is collected before a cancellation reaches it.
    this.pump();
    const { id, generation } = m.key;
    const standing = this.history.standing(id, generation);
    if (standing === "stale") return;
    if (m.type === "start") {
      if (standing === "current") {
        throw new SessionError(`a second start of execution ${id} generation ${generation}`);
      }
      this.history.record(id, generation);
      const old = this.#active.get(id);
      if (old) {
        this.#active.delete(id);
        old.abandon();
        this.#background.add(old);
      }
      this.#start(m.key, m.start);
      this.wake();
      return;
    }
    const r = this.#active.get(id);
    if (r === undefined || r.key.generation !== generation) return; // late
    const problem = r.handle(m);
    if (problem !== null) throw new SessionError(problem);
  }

  #refuse(key: ExecKey, errno: number, why: string): void {
    this.host.log.info({ id: String(key.id), generation: String(key.generation), errno }, `start refused: ${why}`);
    const { kind, body } = encodeGuestMessage({
      type: "terminal",
      key,
      outcome: {
        status: { kind: "none" },
        cause: null,
        launch: { stage: 0, errno },
        stdoutLost: false,
        stderrLost: false,
        reusable: true,
      },
    });
    this.host.emit(encodeFrame(kind, body));
  }

  #start(key: ExecKey, start: Extract<HostMessage, { type: "start" }>["start"]): void {
    if (this.count >= MAX_EXECUTIONS) return this.#refuse(key, ERRNO.EAGAIN, `${this.count} executions run`);
    const mem = executionMemory(start);
    if (mem > MAX_EXECUTION_MEMORY) return this.#refuse(key, ERRNO.ENOMEM, `${mem} bytes of buffers`);
    const errno = launchProblem(start.argv[0]!);
    if (errno !== null) return this.#refuse(key, errno, `cannot run ${start.argv[0]}`);
    let child: Deno.ChildProcess;
    try {
      child = (this.host.spawn ?? spawnInGroup)(start.argv, start.stdin, this.host.identity);
    } catch (e) {
      const n = e instanceof Deno.errors.NotFound ? ERRNO.ENOENT : ERRNO.EAGAIN;
      return this.#refuse(key, n, e instanceof Error ? e.message : String(e));
    }
    const r = new ExecRunner(key, start, child, this.#runnerHost());
    this.#active.set(key.id, r);
    const { kind, body } = encodeGuestMessage({ type: "started", key });
    this.host.emit(encodeFrame(kind, body));
  }

  /** One turn of the loop: every execution steps, another one first each turn; then the next timer is set. */
  pump(): void {
    if (this.#closed) return;
    const all = [...this.#active.values(), ...this.#background];
    const n = all.length;
    // Round robin over the executions that got room: the turn starts after the last one that moved output, so
    // that pumps that move nothing (a read that completed, a credit) never lock the order onto one execution.
    const last = this.#lastServed === null ? -1 : all.indexOf(this.#lastServed);
    const first = n === 0 ? 0 : (last + 1) % n;
    for (let i = 0; i < n; i++) {
      const r = all[(first + i) % n]!;
      if (r.step(TURN_BUDGET) > 0) this.#lastServed = r;
      if (r.terminalSent) {
        // Forget it; a program whose status is not collected stays counted until it is.
        if (this.#active.get(r.key.id) === r) this.#active.delete(r.key.id);
        r.detached = true;
        if (r.alive) this.#background.add(r);
      }
      if (r.detached && !r.alive) this.#background.delete(r);
    }
    this.#arm();
  }

  #arm(): void {
    let next = Infinity;
    for (const r of [...this.#active.values(), ...this.#background]) {
      const d = r.nextDeadline();
      if (d !== null && d < next) next = d;
    }
    if (next === this.#timerAt) return;
    this.#timer?.cancel();
    this.#timer = null;
    this.#timerAt = next;
    if (next === Infinity) return;
    this.#timer = this.host.clock.setTimer(next - this.host.clock.monotonic(), () => {
      this.#timer = null;
      this.#timerAt = Infinity;
      this.wake();
    });
  }

  /** A reset of the session: every attached execution is abandoned and runs to its end detached. */
  abandonAll(): void {
    for (const r of this.#active.values()) {
      r.abandon();
      this.#background.add(r);
    }
    this.#active.clear();
    this.wake();
  }

  /** Drops every execution: kills each group whose program is not collected, and waits up to a second in all. */
  async drop(): Promise<void> {
    const all = [...this.#active.values(), ...this.#background];
    this.#active.clear();
    for (const r of all) r.drop();
    const deadline = Date.now() + DROP_WAIT_MS;
    while (all.some((r) => r.status === null) && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 10));
    }
    this.#background.clear();
    for (const r of all) if (r.status === null) this.#background.add(r);
    this.#timer?.cancel();
    this.#timer = null;
    this.#timerAt = Infinity;
  }

  /** Stops the loop for good. */
  close(): void {
    this.#closed = true;
    this.#timer?.cancel();
  }
}
