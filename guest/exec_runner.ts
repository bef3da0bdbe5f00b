/**
 * One execution's runner in the worker (the engine's Runner bound to a program, seed 002 §"The worker's
 * executions"): the program in a process group of its own, its standard input from the host within the input
 * window, its output to the host within the output credit (one chunk buffered per stream), the timeout, grace
 * and settlement timers, and the terminal outcome. It never blocks: reads, writes and the program's status are
 * promises whose settlement wakes the engine's loop, and {@link ExecRunner.step} does the rest.
 *
 * @module
 */
import {
  type Cause,
  encodeFrame,
  encodeGuestMessage,
  encodeOutputFrame,
  type ExecKey,
  type ExecStart,
  type GuestMessage,
  type HostMessage,
  type Pool,
  type ProgramStatus,
  type Stream,
} from "../core/framing/mod.ts";
import type { Clock } from "../core/clock.ts";
import { killGroup } from "./process_group.ts";

/** What a runner needs of its engine. */
export interface RunnerHost {
  readonly clock: Pick<Clock, "monotonic" | "setTimer">;
  /** Queues a whole message for the host. */
  emit(frame: Uint8Array): void;
  /** Whether the stream to the host takes more output now (≤ 1 MiB queued). */
  outputRoom(): boolean;
  /** Asks for another turn of the loop. */
  wake(): void;
}

const SIGNALS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGILL: 4,
  SIGTRAP: 5,
  SIGABRT: 6,
  SIGBUS: 7,
  SIGFPE: 8,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGSEGV: 11,
  SIGUSR2: 12,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
  SIGSTKFLT: 16,
  SIGCHLD: 17,
  SIGCONT: 18,
  SIGSTOP: 19,
  SIGTSTP: 20,
  SIGTTIN: 21,
  SIGTTOU: 22,
  SIGURG: 23,
  SIGXCPU: 24,
  SIGXFSZ: 25,
  SIGVTALRM: 26,
  SIGPROF: 27,
  SIGWINCH: 28,
  SIGIO: 29,
  SIGPWR: 30,
  SIGSYS: 31,
};

/** The program's status from Deno's: a signal's number (real-time ones from the 128+N code), or an exit code. */
export function programStatus(st: Deno.CommandStatus): ProgramStatus {
  if (st.signal !== null) return { kind: "signal", signal: SIGNALS[st.signal] ?? (st.code > 128 ? st.code - 128 : 0) };
  return { kind: "exit", code: st.code };
}

class StreamState {
  reader: ReadableStreamBYOBReader | null;
  reading = false;
  buf: Uint8Array | null = null;
  eof = false;
  endSent = false;
  lost = false;
  constructor(readonly stream: Stream, readable: ReadableStream<Uint8Array>) {
    this.reader = readable.getReader({ mode: "byob" });
  }
  get done(): boolean {
    return this.endSent || this.lost;
  }
  stop(): void {
    const r = this.reader;
    this.reader = null;
    this.buf = null;
    r?.cancel().catch(() => {/* the pipe may be gone already */});
  }
}

/** One running execution. */
export class ExecRunner {
  readonly streams: [StreamState, StreamState];
  readonly pgid: number;
  readonly startedAt: number;
  status: ProgramStatus | null = null;
  statusAt = 0;
  cause: Cause | null = null;
  causeAt = 0;
  killed = false;
  programGivenUp = false;
  /** Detached from the host: abandoned by a later generation or a reset, or dropped. */
  detached = false;
  terminalSent = false;
  readonly #avail = new Map<Pool, number>();
  readonly #input: Uint8Array[] = [];
  #inputUnits: number[] = [];
  #inputWriter: WritableStreamDefaultWriter<Uint8Array> | null;
  #inputWriting = false;
  #inputOutstanding = 0;
  #inputEnded = false;
  #inputClosed = false;
  #turn = 0;

  constructor(
    readonly key: ExecKey,
    readonly start: ExecStart,
    readonly child: Deno.ChildProcess,
    readonly host: RunnerHost,
  ) {
    this.pgid = child.pid;
    this.startedAt = host.clock.monotonic();
    this.streams = [new StreamState(1, child.stdout), new StreamState(2, child.stderr)];
    this.#inputWriter = start.stdin ? child.stdin.getWriter() : null;
    if (start.sharedPool) this.#avail.set(3, start.output.size);
    else {
      this.#avail.set(1, start.output.size);
      this.#avail.set(2, start.output.size);
    }
    child.status.then((st) => this.#collected(programStatus(st)), (e) => {
      // Deno rejects the status of a program that a real-time signal ended ("Invalid signal: N").
      const m = /Invalid signal: (\d+)/.exec(e instanceof Error ? e.message : String(e));
      this.#collected(m ? { kind: "signal", signal: Number(m[1]) } : { kind: "none" });
    });
  }

  #collected(status: ProgramStatus): void {
    this.status = status;
    this.statusAt = this.host.clock.monotonic();
    // What is left of the group: a descendant that stayed in it neither outlives the program nor holds its output.
    killGroup(this.pgid);
    this.host.wake();
  }

  /**
   * Signals the program and its group. The program itself first: until setsid(1) has made the group, only the
   * program's PID reaches it; its status is not collected yet, so the PID is still its own.
   */
  #kill(signal: Deno.Signal): void {
    if (this.status === null) {
      try {
        this.child.kill(signal);
      } catch (e) {
        if (!(e instanceof TypeError) && !(e instanceof Deno.errors.NotFound)) throw e;
      }
    }
    killGroup(this.pgid, signal);
  }

  #emit(m: GuestMessage): void {
    if (this.detached) return;
    const { kind, body } = encodeGuestMessage(m);
    this.host.emit(encodeFrame(kind, body));
  }

  /** Takes a host message of this execution's generation; returns the problem that ends the session, or null. */
  handle(m: HostMessage): string | null {
    switch (m.type) {
      case "start":
        return `a second start of execution ${m.key.id} generation ${m.key.generation}`;
      case "input": {
        if (!this.start.stdin) return `execution ${m.key.id} takes no input`;
        if (this.#inputEnded) return `input of execution ${m.key.id} after its end`;
        if (m.bytes.length > this.start.chunk) return `input of ${m.bytes.length} bytes beyond the chunk`;
        const units = this.start.input.unit === "bytes" ? m.bytes.length : 1;
        this.#inputOutstanding += units;
        if (this.#inputOutstanding > this.start.input.size) return `input of execution ${m.key.id} beyond its window`;
        if (this.#inputClosed || this.cause !== null || this.status !== null) this.#creditInput(units);
        else {
          this.#input.push(m.bytes.slice());
          this.#inputUnits.push(units);
        }
        this.host.wake();
        return null;
      }
      case "input-end":
        if (!this.start.stdin) return `execution ${m.key.id} takes no input`;
        if (this.#inputEnded) return `a second end of the input of execution ${m.key.id}`;
        this.#inputEnded = true;
        this.host.wake();
        return null;
      case "cancel":
        this.cancel(m.cause);
        return null;
      case "credit": {
        if (m.pool === 0) return `credit of the input of execution ${m.key.id} from the host`;
        if (!this.#avail.has(m.pool)) return `credit of pool ${m.pool}, which execution ${m.key.id} does not have`;
        const v = this.#avail.get(m.pool)! + m.units;
        if (v > this.start.output.size) return `credit of pool ${m.pool} beyond the window of execution ${m.key.id}`;
        this.#avail.set(m.pool, v);
        this.host.wake();
        return null;
      }
    }
  }

  #creditInput(units: number): void {
    this.#inputOutstanding -= units;
    if (units > 0) this.#emit({ type: "credit", key: this.key, pool: 0, units });
  }

  /** Ends the execution with `cause`: its output is truncated, its group gets SIGTERM, then SIGKILL after grace. */
  cancel(cause: Cause): void {
    if (this.status === null && this.cause === null) {
      this.cause = cause;
      this.causeAt = this.host.clock.monotonic();
      this.#kill("SIGTERM");
    }
    this.#truncate();
    this.host.wake();
  }

  #truncate(): void {
    for (const s of this.streams) {
      if (!s.endSent && !(s.eof && s.buf === null)) {
        s.lost = true;
        s.stop();
      }
    }
    this.#closeInput();
  }

  #closeInput(): void {
    const w = this.#inputWriter;
    this.#inputWriter = null;
    for (const u of this.#inputUnits) this.#creditInput(u);
    this.#input.length = 0;
    this.#inputUnits = [];
    w?.close().catch(() => {/* the program may have closed its input */});
  }

  /** Kills the program's group at once and detaches (a drop: stop or the end of the session). */
  drop(): void {
    this.detached = true;
    this.#kill("SIGKILL");
    this.killed = true;
    for (const s of this.streams) s.stop();
    this.#closeInput();
  }

  /** Detaches without killing (a later generation or a reset): the program runs to its end, its output drained. */
  abandon(): void {
    this.detached = true;
    this.#closeInput();
  }

  /** Whether the worker still holds something of it: a program whose status it has not collected, or open streams. */
  get alive(): boolean {
    if (this.status === null) return true;
    return this.streams.some((s) => s.reader !== null && !s.eof);
  }

  /** The next instant at which a timer of this runner is due, or null. */
  nextDeadline(): number | null {
    const d: number[] = [];
    const s = this.start;
    if (this.status === null) {
      if (this.cause === null && s.timeoutMs !== null) d.push(this.startedAt + s.timeoutMs);
      if (this.cause !== null && !this.killed) d.push(this.causeAt + s.graceMs);
      if (this.cause !== null && !this.programGivenUp) d.push(this.causeAt + s.graceMs + s.settlementMs);
    } else if (this.streams.some((x) => !x.eof && x.reader !== null)) {
      d.push(this.statusAt + s.settlementMs + s.graceMs);
    }
    return d.length === 0 ? null : Math.min(...d);
  }

  /** One turn: timers, input, output within `budget` bytes; returns the bytes it moved to the stream. */
  step(budget: number): number {
    const now = this.host.clock.monotonic();
    const s = this.start;
    if (this.status === null) {
      if (this.cause === null && s.timeoutMs !== null && now >= this.startedAt + s.timeoutMs) this.cancel("timeout");
      if (this.cause !== null && !this.killed && now >= this.causeAt + s.graceMs) {
        this.#kill("SIGKILL");
        this.killed = true;
      }
      if (this.cause !== null && !this.programGivenUp && now >= this.causeAt + s.graceMs + s.settlementMs) {
        this.programGivenUp = true;
      }
    } else {
      // The fence: a stream that a process outside the group may hold gets settlement and grace to close.
      for (const st of this.streams) {
        if (!st.eof && st.reader !== null && now >= this.statusAt + s.settlementMs + s.graceMs) {
          st.lost = true;
          st.stop();
        }
      }
      if (!this.#inputClosed && this.#inputWriter !== null && this.#input.length === 0 && !this.#inputWriting) {
        // The program ended: nothing reads its input any more.
        if (!this.#inputEnded) this.#markInputClosed();
      }
    }
    this.#stepInput();
    const moved = this.detached ? this.#drain() : this.#stepOutput(budget);
    this.#maybeTerminal();
    return moved;
  }

  #markInputClosed(): void {
    if (this.#inputClosed) return;
    this.#inputClosed = true;
    this.#emit({ type: "input-closed", key: this.key });
    this.#closeInput();
  }

  #stepInput(): void {
    const w = this.#inputWriter;
    if (w === null || this.#inputWriting) return;
    if (this.#input.length === 0) {
      if (this.#inputEnded) {
        this.#inputWriter = null;
        w.close().catch(() => {/* closed by the program */});
      }
      return;
    }
    const bytes = this.#input.shift()!;
    const units = this.#inputUnits.shift()!;
    this.#inputWriting = true;
    w.write(bytes).then(
      () => {
        this.#inputWriting = false;
        this.#creditInput(units);
        this.host.wake();
      },
      () => {
        this.#inputWriting = false;
        this.#creditInput(units);
        this.#markInputClosed();
        this.host.wake();
      },
    );
  }

  #read(st: StreamState, discard: boolean): void {
    const r = st.reader;
    if (r === null || st.reading || st.eof || st.buf !== null) return;
    st.reading = true;
    r.read(new Uint8Array(this.start.chunk)).then(
      ({ value, done }) => {
        st.reading = false;
        if (done || value === undefined) st.eof = true;
        else if (!discard && st.reader !== null && value.length > 0) st.buf = value;
        this.host.wake();
      },
      () => {
        st.reading = false;
        st.eof = true;
        this.host.wake();
      },
    );
  }

  #drain(): number {
    for (const st of this.streams) this.#read(st, true);
    return 0;
  }

  #stepOutput(budget: number): number {
    let moved = 0;
    const order = this.#turn++ % 2 === 0 ? this.streams : [this.streams[1], this.streams[0]];
    for (const st of order) {
      while (st.buf !== null && moved < budget && this.host.outputRoom()) {
        const pool: Pool = this.start.sharedPool ? 3 : st.stream;
        const avail = this.#avail.get(pool)!;
        let n: number;
        if (this.start.output.unit === "bytes") n = Math.min(st.buf.length, avail);
        else n = avail >= 1 ? st.buf.length : 0;
        if (n === 0) break;
        this.#avail.set(pool, avail - (this.start.output.unit === "bytes" ? n : 1));
        const frame = encodeOutputFrame(this.key, st.stream, st.buf.subarray(0, n));
        this.host.emit(frame);
        moved += frame.length;
        st.buf = n < st.buf.length ? st.buf.subarray(n) : null;
      }
      // The runner's own buffer holds one chunk per stream even while the stream to the host is full, so that
      // each execution has output ready when room appears, and the turns stay fair.
      if (st.buf === null) this.#read(st, false);
      if (st.eof && st.buf === null && !st.endSent && !st.lost) {
        st.endSent = true;
        st.reader = null;
        this.#emit({ type: "end", key: this.key, stream: st.stream });
      }
    }
    return moved;
  }

  #maybeTerminal(): void {
    if (this.terminalSent || this.detached) return;
    if (this.status === null && !this.programGivenUp) return;
    if (!this.streams.every((s) => s.done)) return;
    this.terminalSent = true;
    if (this.status === null) this.#kill("SIGKILL");
    this.#closeInput();
    this.#emit({
      type: "terminal",
      key: this.key,
      outcome: {
        status: this.status ?? { kind: "none" },
        cause: this.cause,
        launch: null,
        stdoutLost: this.streams[0].lost,
        stderrLost: this.streams[1].lost,
        reusable: this.status !== null && !this.streams.some((s) => s.lost),
      },
    });
  }
}
