/**
 * The node's side of the helper protocol: one connection to the helper's unix socket per process, opened on first
 * use and again after it drops; requests are pipelined and answers matched by id, each within a timeout. Every
 * refusal or failure is a {@link HelperError} whose message starts `helper: `; an unreachable socket is `unreachable`.
 * When the helper ends the connection with its `closing` notice (idle, or evicted for a newer peer), every request
 * still unanswered was never read by it (the notice follows every answer), so each is sent again, once, on a new
 * connection.
 *
 * The timeouts share one timer per client, armed at the earliest deadline of the calls pending and dropped when none
 * is: a call costs no timer of its own, and the node's first calls, before its first `Hello`, arm no `setTimeout` (in
 * Deno 2.9 the first `setTimeout` of a process loads its Node layer's timers, ~10 ms of a start: issue 24). The timer
 * is a {@link Clock.setRareTimer}, as a client arms it only when it goes from idle to busy or a call with a nearer
 * deadline arrives. Answers are read with the connection's own `read`, not through its `readable` stream: that getter
 * loads Deno's web streams, ~8 ms of the node's start before its first `Hello` (issue 24).
 *
 * @module
 */
import {
  answerError,
  boundedLines,
  decodeAnswer,
  encodeRequest,
  type HelperArgs,
  HelperError,
  type HelperOp,
  type HelperResults,
  MAX_ANSWER_LINE,
  MAX_REQUEST_LINE,
} from "../../core/helper/mod.ts";
import type { Logger } from "../../core/log/mod.ts";
import { type Clock, realClock, type Timer } from "../../core/clock.ts";

/** How long each op may take before the node gives up on its answer, in ms. */
export const OP_TIMEOUTS_MS: Readonly<Partial<Record<HelperOp, number>>> = {
  "host.inventory": 60_000,
  // tool version runs (10 s each, in parallel) and the KVM probe (QEMU, 30 s at most)
  "host.doctor": 60_000,
  // reads, hashes and unpacks a release of up to 512 MB
  "daemon.install": 600_000,
  "gpu.reset": 180_000,
  // the diag.dcgm kind's own timeout (000: an hour): level 4 runs long
  "dcgm.diag": 3_600_000,
  "node.reboot": 60_000,
  "slice.apply": 60_000,
  "slice.remove": 60_000,
  "libvirt.list": 60_000,
  // systemd-run of a VMM unit, and systemctl stop of one (systemd's own stop timeout is 90 s)
  "ch.launch": 120_000,
  "ch.stop": 120_000,
  "libvirt.define": 120_000,
  "libvirt.start": 120_000,
  "libvirt.shutdown": 60_000,
  "libvirt.destroy": 60_000,
  "libvirt.undefine": 60_000,
  "libvirt.blockresize": 60_000,
  // A memory state is written and read at disk speed: a large guest takes minutes.
  "libvirt.save": 3_600_000,
  "libvirt.restore": 3_600_000,
  "libvirt.setmem": 60_000,
  "libvirt.domstats": 60_000,
  // the disk.wipe kind's own timeout (000 §Timeouts: six hours): a large disk's overwrite and full read-back
  "disk.wipe": 6 * 3_600_000,
  // the deploy.image kind's own timeout (000 §Timeouts: an hour)
  "disk.deploy": 3_600_000,
  // kernel and initrd may be downloaded: the boot.kexec kind's own timeout (000 §Timeouts: 15 minutes)
  "kexec.load": 15 * 60_000,
};

/** The timeout of ops not in {@link OP_TIMEOUTS_MS}. */
export const DEFAULT_OP_TIMEOUT_MS = 30_000;

/** Options of {@link HelperClient}. */
export interface HelperClientOptions {
  readonly socket: string;
  /** Overrides per op (tests shorten them). */
  readonly timeoutsMs?: Partial<Record<HelperOp, number>>;
  readonly defaultTimeoutMs?: number;
  readonly log?: Logger;
  /** Deadlines are measured and swept on it (tests move it by hand). */
  readonly clock?: Pick<Clock, "monotonic" | "setRareTimer">;
}

interface _Pending {
  readonly op: HelperOp;
  conn: Deno.Conn;
  readonly line: Uint8Array;
  /** Sent again after a `closing` notice already. */
  resent: boolean;
  resolve(v: unknown): void;
  reject(e: Error): void;
  /** When the call times out, on the client's clock's monotonic ms. */
  readonly deadline: number;
  /** Its timeout, for the message. */
  readonly ms: number;
}

const _enc = new TextEncoder();

/** A connection to the root helper. */
export class HelperClient {
  readonly socket: string;
  readonly #opts: HelperClientOptions;
  #conn: Deno.Conn | undefined;
  #connecting: Promise<Deno.Conn> | undefined;
  #out: Promise<void> = Promise.resolve();
  #nextId = 1;
  readonly #pending = new Map<number, _Pending>();
  readonly #clock: Pick<Clock, "monotonic" | "setRareTimer">;
  /** The one timer of the pending calls' deadlines, armed at `at` (the earliest); none when no call is pending. */
  #sweep: { readonly at: number; readonly timer: Timer } | undefined;
  #closed = false;

  constructor(opts: HelperClientOptions) {
    this.socket = opts.socket;
    this.#opts = opts;
    this.#clock = opts.clock ?? realClock;
  }

  /** Asks the helper to run `op`; resolves with its result or rejects with a {@link HelperError}. */
  async call<O extends HelperOp>(op: O, args: HelperArgs[O]): Promise<HelperResults[O]> {
    if (this.#closed) throw new HelperError("unreachable", `${op}: the helper client is closed`);
    const id = this.#nextId++;
    const line = _enc.encode(encodeRequest(id, op, args));
    if (line.length > MAX_REQUEST_LINE + 1) {
      throw new HelperError("line-too-long", `${op}: request of ${line.length} bytes passes ${MAX_REQUEST_LINE}`);
    }
    const conn = await this.#connection(op);
    const ms = this.#opts.timeoutsMs?.[op] ?? OP_TIMEOUTS_MS[op] ?? this.#opts.defaultTimeoutMs ??
      DEFAULT_OP_TIMEOUT_MS;
    const deadline = this.#clock.monotonic() + ms;
    const answer = new Promise<unknown>((resolve, reject) => {
      this.#pending.set(id, { op, conn, line, resent: false, resolve, reject, deadline, ms });
    });
    this.#track(deadline);
    this.#send(conn, op, line);
    return await answer as HelperResults[O];
  }

  /** A call due at `deadline` is pending: the timer is armed for it unless it is already armed as early. */
  #track(deadline: number): void {
    if (!this.#sweep || deadline < this.#sweep.at) this.#armSweep(deadline);
  }

  /** (Re)arms the deadline timer at `at`. */
  #armSweep(at: number): void {
    this.#sweep?.timer.cancel();
    const timer = this.#clock.setRareTimer(Math.max(0, at - this.#clock.monotonic()), () => {
      if (this.#sweep?.timer !== timer) return;
      this.#sweep = undefined;
      this.#expire();
    });
    this.#sweep = { at, timer };
  }

  /** Times out the calls past their deadline; rearms at the earliest deadline left. */
  #expire(): void {
    const now = this.#clock.monotonic();
    let next = Infinity;
    for (const [id, p] of this.#pending) {
      if (p.deadline <= now) {
        this.#pending.delete(id);
        p.reject(new HelperError("timeout", `${p.op}: no answer from the helper in ${p.ms} ms`));
      } else if (p.deadline < next) next = p.deadline;
    }
    if (next !== Infinity) this.#armSweep(next);
  }

  /** `id` is answered (or failed): it leaves the pending calls; the timer goes with the last one. */
  #settle(id: number): void {
    this.#pending.delete(id);
    if (this.#pending.size === 0 && this.#sweep) {
      this.#sweep.timer.cancel();
      this.#sweep = undefined;
    }
  }

  #send(conn: Deno.Conn, op: HelperOp, line: Uint8Array): void {
    this.#out = this.#out.then(() => _writeAll(conn, line)).catch((e) => {
      this.#fail(conn, `${op}: the request could not be sent: ${e instanceof Error ? e.message : String(e)}`);
    });
  }

  /** The helper ended `conn` with `closing`: its unanswered requests were not read; each is sent again once. */
  async #resend(conn: Deno.Conn, why: string): Promise<void> {
    const again = [...this.#pending].filter(([, p]) => p.conn === conn && !p.resent);
    for (const [id, p] of again) {
      p.resent = true;
      this.#pending.delete(id);
    }
    this.#fail(conn, why); // the rest (already sent again once) fail
    if (again.length === 0 || this.#closed) return;
    this.#opts.log?.info(
      { socket: this.socket, requests: again.length, why },
      "helper closed the connection; resending",
    );
    for (const [id, p] of again) {
      this.#pending.set(id, p);
      this.#track(p.deadline); // failing the rest may have dropped the timer
    }
    let next: Deno.Conn;
    try {
      next = await this.#connection(again[0]![1].op);
    } catch (e) {
      for (const [id, p] of again) {
        if (this.#pending.get(id) !== p) continue;
        this.#settle(id);
        p.reject(e instanceof HelperError ? e : new HelperError("unreachable", `${p.op}: ${String(e)}`));
      }
      return;
    }
    for (const [id, p] of again) {
      if (this.#pending.get(id) !== p) continue; // timed out meanwhile
      p.conn = next;
      this.#send(next, p.op, p.line);
    }
  }

  /** Connects now (the node checks the helper before it starts); throws `unreachable` when it cannot. */
  async connect(): Promise<void> {
    await this.#connection("host.boot_id");
  }

  /** Ends the connection; pending calls fail. */
  close(): void {
    this.#closed = true;
    if (this.#conn) this.#fail(this.#conn, "the helper client closed");
  }

  #connection(op: HelperOp): Promise<Deno.Conn> {
    if (this.#conn) return Promise.resolve(this.#conn);
    this.#connecting ??= (async () => {
      try {
        const conn = await Deno.connect({ transport: "unix", path: this.socket });
        this.#conn = conn;
        this.#out = Promise.resolve();
        void this.#read(conn);
        this.#opts.log?.info({ socket: this.socket }, "connected to the helper");
        return conn;
      } catch (e) {
        const why = e instanceof Error ? e.message : String(e);
        throw new HelperError("unreachable", `${op}: cannot reach the helper at ${this.socket}: ${why}`, { cause: e });
      } finally {
        this.#connecting = undefined;
      }
    })();
    return this.#connecting;
  }

  async #read(conn: Deno.Conn): Promise<void> {
    let why = "the helper closed the connection";
    try {
      for await (const ev of boundedLines(conn, MAX_ANSWER_LINE)) {
        if (ev.kind === "too-long") {
          why = `an answer passed ${ev.max} bytes`;
          break;
        }
        if (ev.kind === "not-utf8") {
          why = "an answer was not UTF-8";
          break;
        }
        const a = decodeAnswer(ev.line);
        if (a.id === null && !a.ok && a.error.code === "closing") {
          await this.#resend(conn, `the helper closed the connection: ${a.error.message}`);
          return;
        }
        if (a.id === null) {
          why = `the helper refused a line: ${a.ok ? "" : a.error.message}`;
          break;
        }
        const p = this.#pending.get(a.id);
        if (!p) continue; // timed out already
        this.#settle(a.id);
        if (a.ok) p.resolve(a.result);
        else p.reject(answerError(a));
      }
    } catch (e) {
      why = e instanceof HelperError ? e.detail : `connection failed: ${e instanceof Error ? e.message : String(e)}`;
    }
    this.#fail(conn, why);
  }

  /** Drops `conn` (once) and fails every pending call with `why`. */
  #fail(conn: Deno.Conn, why: string): void {
    if (this.#conn === conn) {
      this.#conn = undefined;
      try {
        conn.close();
      } catch (e) {
        if (!(e instanceof Deno.errors.BadResource)) throw e;
      }
      if (!this.#closed) this.#opts.log?.warn({ socket: this.socket, err: why }, "helper connection lost");
    }
    for (const [id, p] of this.#pending) {
      if (p.conn !== conn) continue;
      this.#settle(id);
      p.reject(new HelperError("unreachable", `${p.op}: ${why}`));
    }
  }
}

async function _writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let n = 0;
  while (n < bytes.length) n += await conn.write(bytes.subarray(n));
}
