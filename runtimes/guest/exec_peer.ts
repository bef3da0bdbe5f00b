/**
 * The host's side of one execution (the engine's Peer, seed 002 §Executions): it sends the start, the input
 * within the input window, credit back once its sink took the output, and the cancellation; it checks that the
 * guest keeps to the output window, and settles on the terminal outcome.
 *
 * @module
 */
import type { ExecKey, ExecStart, GuestMessage, HostMessage, Outcome, Pool, Stream } from "../../core/framing/mod.ts";
import type { Cause } from "../../core/framing/mod.ts";
import { settled } from "../../core/settled.ts";

/** Where the program's output goes; a promise holds back the credit (and so the guest) until it settles. */
export type OutputSink = (stream: Stream, bytes: Uint8Array) => void | Promise<void>;

/** The execution was abandoned by a start of a later generation, or the client ended. */
export class ExecAbandoned extends Error {
  override name = "ExecAbandoned";
}

/** One execution as the host sees it. */
export class ExecPeer {
  readonly started: Promise<void>;
  readonly terminal: Promise<Outcome>;
  /** Whether the guest reported that the program's input closed before the host ended it. */
  inputClosed = false;
  /** The streams whose end arrived. */
  readonly ended = new Set<Stream>();
  #resolveStarted!: () => void;
  #rejectStarted!: (e: Error) => void;
  #resolveTerminal!: (o: Outcome) => void;
  #rejectTerminal!: (e: Error) => void;
  readonly #avail = new Map<Pool, number>();
  #inputAvail: number;
  #inputWaiter: (() => void) | null = null;
  #sinkChain: Promise<void> = Promise.resolve();
  #failed: Error | null = null;

  constructor(
    readonly key: ExecKey,
    readonly start: ExecStart,
    readonly sink: OutputSink,
    readonly send: (m: HostMessage) => Promise<void>,
  ) {
    this.started = new Promise((res, rej) => {
      this.#resolveStarted = res;
      this.#rejectStarted = rej;
    });
    this.terminal = new Promise((res, rej) => {
      this.#resolveTerminal = res;
      this.#rejectTerminal = rej;
    });
    void settled(this.started);
    void settled(this.terminal);
    const w = start.output.size;
    if (start.sharedPool) this.#avail.set(3, w);
    else {
      this.#avail.set(1, w);
      this.#avail.set(2, w);
    }
    this.#inputAvail = start.input.size;
  }

  /** Sends the start. */
  sendStart(): Promise<void> {
    return this.send({ type: "start", key: this.key, start: this.start });
  }

  #units(bytes: number, unit: "bytes" | "frames"): number {
    return unit === "bytes" ? bytes : 1;
  }

  /** Takes a guest message about this execution; returns a problem that ends the client, or null. */
  take(m: GuestMessage): string | null {
    switch (m.type) {
      case "started":
        this.#resolveStarted();
        return null;
      case "output": {
        const pool: Pool = this.start.sharedPool ? 3 : m.stream;
        const units = this.#units(m.bytes.length, this.start.output.unit);
        const avail = this.#avail.get(pool)!;
        if (units > avail) return `execution ${this.key.id}: output beyond the credit of pool ${pool}`;
        this.#avail.set(pool, avail - units);
        const bytes = m.bytes.slice();
        this.#sinkChain = this.#sinkChain.then(async () => {
          await this.sink(m.stream, bytes);
          if (this.#failed) return;
          this.#avail.set(pool, this.#avail.get(pool)! + units);
          await this.send({ type: "credit", key: this.key, pool, units });
        });
        this.#sinkChain.catch((e) => this.fail(e instanceof Error ? e : new Error(String(e))));
        return null;
      }
      case "end":
        this.ended.add(m.stream);
        return null;
      case "input-closed":
        this.inputClosed = true;
        this.#wakeInput();
        return null;
      case "credit": {
        if (m.pool !== 0) return `execution ${this.key.id}: the guest credited output pool ${m.pool}`;
        this.#inputAvail += m.units;
        if (this.#inputAvail > this.start.input.size) return `execution ${this.key.id}: input credit beyond the window`;
        this.#wakeInput();
        return null;
      }
      case "terminal":
        this.#resolveStarted();
        this.#sinkChain.then(() => this.#resolveTerminal(m.outcome), (e) => this.#rejectTerminal(e));
        return null;
    }
  }

  #wakeInput(): void {
    const w = this.#inputWaiter;
    this.#inputWaiter = null;
    w?.();
  }

  /** Sends `bytes` as input, in chunks, waiting for the input window; stops early once the input closed. */
  async writeInput(bytes: Uint8Array): Promise<void> {
    const unit = this.start.input.unit;
    const max = unit === "bytes" ? Math.min(this.start.chunk, this.start.input.size) : this.start.chunk;
    for (let o = 0; o < bytes.length;) {
      if (this.#failed) throw this.#failed;
      if (this.inputClosed) return;
      const n = Math.min(max, bytes.length - o);
      const units = this.#units(n, unit);
      if (this.#inputAvail < units) {
        await new Promise<void>((res) => this.#inputWaiter = res);
        continue;
      }
      this.#inputAvail -= units;
      await this.send({ type: "input", key: this.key, bytes: bytes.subarray(o, o + n) });
      o += n;
    }
  }

  /** Ends the input. */
  endInput(): Promise<void> {
    return this.send({ type: "input-end", key: this.key });
  }

  /** Cancels the execution with a cause the host may name. */
  cancel(cause: Cause = "cancel"): Promise<void> {
    return this.send({ type: "cancel", key: this.key, cause });
  }

  /** Fails every pending promise. */
  fail(e: Error): void {
    if (this.#failed) return;
    this.#failed = e;
    this.#rejectStarted(e);
    this.#rejectTerminal(e);
    this.#wakeInput();
  }

  /** A start of a later generation abandoned this one. */
  abandon(): void {
    this.fail(new ExecAbandoned(`execution ${this.key.id} generation ${this.key.generation} was abandoned`));
  }
}
