/**
 * Ed25519 verification on a thread of its own, fed in batches through shared memory: what a delivered command's
 * signature check costs the event loop (issue 24).
 *
 * Why not WebCrypto: `crypto.subtle.verify` does run off the event loop (Deno's blocking pool), but each call still
 * costs the loop its WebIDL conversions, copies, a promise and a wake-up when the pool thread is done: 11–45 µs per
 * call measured alone on this project's 2-core hosts, more the busier the host. Why not `postMessage`: a message each
 * way costs the loop about as much again (serialising, the post, the receiving side's event machinery). Here the
 * requests asked for in one turn of the event loop are packed into a `SharedArrayBuffer`, the thread is woken with
 * `Atomics.notify`, and the loop waits with `Atomics.waitAsync` for the thread to store the batch's number back: one
 * wake-up per batch and about 1 µs of packing per signature.
 *
 * How batches form: {@link Ed25519Thread.verify} queues the request and, unless a batch is already with the thread,
 * hands what is queued over at the end of the current promise jobs (a microtask). While a batch is with the thread,
 * new requests wait and go together as soon as its verdicts are in, so under load (eight commands in flight, all
 * released by one group commit) batches grow by themselves, and a lone request waits for at most one batch ahead of
 * it. A request too large for the shared area ({@link REQUEST_BYTES}; a big signed desired state, never a command) is
 * verified with WebCrypto instead, with the same verdicts.
 *
 * The thread is `node:worker_threads` running {@link THREAD_SOURCE} (`node:crypto`'s one-shot `verify`, imported keys
 * cached), blocked in `Atomics.wait` between batches. It starts on the first verification, never at start (neither
 * `node:worker_threads` nor `node:crypto` is loaded on the event loop's account), and needs no permission of its own:
 * its code is evaluated from a string, not read from a file, and it inherits the role's flags. It holds the process
 * open only while a batch is with it (`ref`, then `unref`), so an idle verifier never keeps an agent or a test alive.
 *
 * Failure closes, never opens: a thread that throws, exits or cannot be started, or that stores back anything but
 * the batch's number and one verdict byte (0 or 1) per request (each is set to a third value before the batch is
 * handed over, so a verdict left unwritten never reads as an earlier batch's), rejects every request in flight and
 * queued with {@link VerifierThreadError} — not a verdict, so a caller never reads it as a valid signature, and a command is not
 * refused as `BAD_SIGNATURE` for the verifier's fault (the acceptance checks let it propagate: the delivery fails
 * and the gateway delivers the command again on its next session). The next request starts a fresh thread.
 *
 * What it gains and costs, measured (2-core host shared with other work, load 2–8): the event loop's CPU per check
 * is 3 µs eight at a time and 11–12 µs one at a time, against WebCrypto's 13–19 and 31–43 in the same runs
 * (`bench:commands`' stage lines). End to end the gain is smaller than those figures suggest: with eight commands in
 * flight the loop seldom sleeps, so WebCrypto's wake-ups mostly fall on turns the loop runs anyway. Direct rounds
 * alternating the two verifiers in one process (`BCD_BENCH_VERIFIER=alternate`, three runs of 40 rounds) put the
 * thread at −6 ± 8, +2 ± 7 and −20 ± 12 µs of loop CPU per settled command, with ACKED and settled ratios equal
 * within their standard errors. One thread verifies a batch one signature after another (~50 µs each), where the
 * blocking pool spreads WebCrypto's over both cores: a check's own latency was ~75 µs longer at p50 in those rounds.
 * The thread's isolate adds ~18–21 MiB of RSS once started, and a process's first verification waits ~45 ms for it.
 *
 * Verdicts equal {@link verifyEd25519}'s and `verifyEd25519Sync`'s: false for a key or signature of the wrong length
 * (decided here, without the thread), for a key that is no curve point and for a signature that does not verify; the
 * Wycheproof vectors (`wycheproof_test.ts`) pin all three.
 *
 * @module
 */
import { ED25519_PUBLIC_KEY_BYTES, ED25519_SIGNATURE_BYTES, verifyEd25519 } from "./ed25519.ts";

/** The most requests one batch carries. */
export const MAX_BATCH = 64;
/** Bytes of the shared request area; the verdicts follow it, one byte per request. */
export const REQUEST_BYTES = 256 * 1024;
/** Bytes of a packed request before its message: key, signature, message length (u32, big-endian). */
const _HEADER = ED25519_PUBLIC_KEY_BYTES + ED25519_SIGNATURE_BYTES + 4;
/** What a verdict byte holds until the thread writes the verdict (0 or 1). */
const _UNSET = 0xff;
/** Slots of the shared control words (`Int32Array`): the batch handed over, the batch answered, its count, its bytes. */
export const CTRL = { request: 0, answer: 1, count: 2, length: 3 } as const;

/**
 * The thread's program (CommonJS, as `node:worker_threads` evaluates it; `workerData` is {@link VerifierShared}).
 * It waits until the request slot changes, verifies the `count` packed requests in the first `length` bytes of the
 * data (key 32 bytes, signature 64, message length u32 BE, message), writes one verdict byte each after the request
 * area (1 when it verifies, else 0), then stores the batch's number in the answer slot and notifies it.
 * `node:crypto`'s refusals of a key or signature are verdicts (0); any other exception ends the thread, which fails
 * the batch closed.
 */
export const THREAD_SOURCE = `"use strict";
const { workerData } = require("node:worker_threads");
const { createPublicKey, verify } = require("node:crypto");
const ctrl = new Int32Array(workerData.ctrl);
const data = Buffer.from(workerData.data);
const SPKI_PREFIX = Buffer.from([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00]);
const keys = new Map();
function refused(e) {
  return e instanceof TypeError || e instanceof RangeError ||
    (e instanceof Error && typeof e.code === "string" && e.code.startsWith("ERR_"));
}
function verdict(pk, sig, msg) {
  const id = pk.toString("hex");
  let key = keys.get(id);
  if (key === undefined) {
    try {
      key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, pk]), format: "der", type: "spki" });
    } catch (e) {
      if (refused(e)) return 0;
      throw e;
    }
    if (keys.size >= 256) keys.delete(keys.keys().next().value);
    keys.set(id, key);
  }
  try {
    return verify(null, msg, key, sig) === true ? 1 : 0;
  } catch (e) {
    if (refused(e)) return 0;
    throw e;
  }
}
let seen = 0;
for (;;) {
  Atomics.wait(ctrl, ${CTRL.request}, seen);
  const seq = Atomics.load(ctrl, ${CTRL.request});
  const n = Atomics.load(ctrl, ${CTRL.count});
  const length = Atomics.load(ctrl, ${CTRL.length});
  if (n < 0 || n > ${MAX_BATCH} || length < 0 || length > ${REQUEST_BYTES}) {
    throw new RangeError("batch " + seq + " claims " + n + " requests in " + length + " bytes");
  }
  let o = 0;
  for (let i = 0; i < n; i++) {
    if (o + ${_HEADER} > length) throw new RangeError("request " + i + " of batch " + seq + " is cut short");
    const end = o + ${_HEADER} + data.readUInt32BE(o + 96);
    if (end > length) throw new RangeError("request " + i + " of batch " + seq + " is cut short");
    data[${REQUEST_BYTES} + i] = verdict(data.subarray(o, o + 32), data.subarray(o + 32, o + 96), data.subarray(o + ${_HEADER}, end));
    o = end;
  }
  if (o !== length) throw new RangeError("batch " + seq + " has bytes past its " + n + " requests");
  seen = seq;
  Atomics.store(ctrl, ${CTRL.answer}, seq);
  Atomics.notify(ctrl, ${CTRL.answer});
}
`;

/** The verifier could not give a verdict (its thread failed): never a verdict, always a refusal to decide. */
export class VerifierThreadError extends Error {
  override name = "VerifierThreadError";
}

/** The memory a thread shares with its verifier: control words and the request area with the verdicts after it. */
export interface VerifierShared {
  readonly ctrl: SharedArrayBuffer;
  readonly data: SharedArrayBuffer;
}

/** What {@link Ed25519Thread} needs of a thread: `node:worker_threads`' `Worker`, or a test's stand-in. */
export interface VerifierPort {
  on(event: "error" | "exit", listener: (value: unknown) => void): unknown;
  ref(): void;
  unref(): void;
  terminate(): Promise<number>;
}

/** Starts the real thread over `shared`: `node:worker_threads` is imported here, on the first verification. */
export async function spawnVerifierThread(shared: VerifierShared): Promise<VerifierPort> {
  const { Worker } = await import("node:worker_threads");
  return new Worker(THREAD_SOURCE, { eval: true, workerData: shared });
}

interface _Job {
  readonly publicKey: Uint8Array;
  readonly signature: Uint8Array;
  readonly message: Uint8Array;
  resolve(ok: boolean): void;
  reject(e: Error): void;
}

interface _Thread {
  readonly port: VerifierPort;
  readonly ctrl: Int32Array;
  readonly data: Uint8Array;
  readonly view: DataView;
  /** The number of the last batch handed over (0: none yet). */
  seq: number;
}

interface _Batch {
  readonly thread: _Thread;
  readonly seq: number;
  readonly jobs: readonly _Job[];
}

/** Requests handed to a thread and the batches they went in. */
export interface VerifierStats {
  readonly verifies: number;
  readonly batches: number;
}

/** An Ed25519 verifier thread fed in batches (see the module doc). */
export class Ed25519Thread {
  readonly #spawn: (shared: VerifierShared) => Promise<VerifierPort>;
  #thread: _Thread | undefined;
  #starting = false;
  #closed = false;
  #pending: _Job[] = [];
  #inFlight: _Batch | undefined;
  #flushQueued = false;
  #verifies = 0;
  #batches = 0;

  constructor(spawn: (shared: VerifierShared) => Promise<VerifierPort> = spawnVerifierThread) {
    this.#spawn = spawn;
  }

  /**
   * Verifies `signature` over exactly `message` with the raw public key. Resolves false for a key or signature of the
   * wrong length, a key that is no curve point, or a signature that does not verify; rejects only with
   * {@link VerifierThreadError} when the thread failed. The bytes are read when the batch is packed, at the end of
   * the current promise jobs or once the batch ahead is answered: do not change them before the promise settles.
   */
  verify(publicKey: Uint8Array, signature: Uint8Array, message: Uint8Array): Promise<boolean> {
    if (this.#closed) return Promise.reject(new VerifierThreadError("the Ed25519 verifier is closed"));
    if (publicKey.length !== ED25519_PUBLIC_KEY_BYTES || signature.length !== ED25519_SIGNATURE_BYTES) {
      return Promise.resolve(false);
    }
    if (_HEADER + message.length > REQUEST_BYTES) return verifyEd25519(publicKey, signature, message);
    const { promise, resolve, reject } = Promise.withResolvers<boolean>();
    this.#pending.push({ publicKey, signature, message, resolve, reject });
    if (!this.#flushQueued && this.#inFlight === undefined) {
      this.#flushQueued = true;
      queueMicrotask(() => {
        this.#flushQueued = false;
        this.#flush();
      });
    }
    return promise;
  }

  /** Requests handed to a thread and the batches they went in (the mean batch is their ratio). */
  get stats(): VerifierStats {
    return { verifies: this.#verifies, batches: this.#batches };
  }

  /** Stops the thread for good; requests in flight or queued, and any later one, reject with {@link VerifierThreadError}. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#drop(new VerifierThreadError("the Ed25519 verifier was closed"))?.terminate();
  }

  #flush(): void {
    if (this.#inFlight !== undefined || this.#pending.length === 0) return;
    const t = this.#thread;
    if (t === undefined) return this.#start();
    let n = 0;
    let length = 0;
    while (n < this.#pending.length && n < MAX_BATCH) {
      const size = _HEADER + this.#pending[n]!.message.length;
      if (length + size > REQUEST_BYTES) break;
      length += size;
      n++;
    }
    const jobs = this.#pending.splice(0, n);
    let o = 0;
    for (const j of jobs) {
      t.data.set(j.publicKey, o);
      t.data.set(j.signature, o + ED25519_PUBLIC_KEY_BYTES);
      t.view.setUint32(o + ED25519_PUBLIC_KEY_BYTES + ED25519_SIGNATURE_BYTES, j.message.length);
      t.data.set(j.message, o + _HEADER);
      o += _HEADER + j.message.length;
    }
    // No verdict yet: a thread that answers without writing one leaves this, which is refused, never a stale 1.
    t.data.fill(_UNSET, REQUEST_BYTES, REQUEST_BYTES + n);
    const batch: _Batch = { thread: t, seq: ++t.seq, jobs };
    this.#inFlight = batch;
    Atomics.store(t.ctrl, CTRL.count, n);
    Atomics.store(t.ctrl, CTRL.length, length);
    Atomics.store(t.ctrl, CTRL.request, batch.seq);
    Atomics.notify(t.ctrl, CTRL.request);
    t.port.ref();
    this.#verifies += n;
    this.#batches++;
    const answered = Atomics.waitAsync(t.ctrl, CTRL.answer, batch.seq - 1);
    if (answered.async) void answered.value.then(() => this.#answer(batch));
    else queueMicrotask(() => this.#answer(batch));
  }

  #start(): void {
    if (this.#starting) return;
    this.#starting = true;
    const shared = {
      ctrl: new SharedArrayBuffer(4 * Object.keys(CTRL).length),
      data: new SharedArrayBuffer(REQUEST_BYTES + MAX_BATCH),
    };
    this.#spawn(shared).then((port) => {
      this.#starting = false;
      if (this.#closed) return void port.terminate();
      const t: _Thread = {
        port,
        ctrl: new Int32Array(shared.ctrl),
        data: new Uint8Array(shared.data),
        view: new DataView(shared.data),
        seq: 0,
      };
      port.on("error", (e) => {
        if (this.#thread === t) this.#fail(new VerifierThreadError("the Ed25519 verifier thread failed", { cause: e }));
      });
      port.on("exit", (code) => {
        if (this.#thread === t) {
          this.#fail(new VerifierThreadError(`the Ed25519 verifier thread exited (code ${String(code)})`));
        }
      });
      this.#thread = t;
      this.#flush();
    }, (e: unknown) => {
      this.#starting = false;
      this.#fail(new VerifierThreadError("the Ed25519 verifier thread did not start", { cause: e }));
    });
  }

  #answer(batch: _Batch): void {
    if (this.#inFlight !== batch) return; // the thread failed meanwhile: its requests are rejected already
    const t = batch.thread;
    const answered = Atomics.load(t.ctrl, CTRL.answer);
    const verdicts = t.data.subarray(REQUEST_BYTES, REQUEST_BYTES + batch.jobs.length);
    if (answered !== batch.seq || !verdicts.every((v) => v === 0 || v === 1)) {
      return this.#fail(
        new VerifierThreadError(
          `the Ed25519 verifier thread answered batch ${batch.seq} of ${batch.jobs.length} with batch number ` +
            `${answered} and verdicts ${verdicts.join(",")} (one 0 or 1 per request expected)`,
        ),
      );
    }
    this.#inFlight = undefined;
    for (let i = 0; i < batch.jobs.length; i++) batch.jobs[i]!.resolve(verdicts[i] === 1);
    if (this.#pending.length > 0) this.#flush();
    else t.port.unref();
  }

  /** Rejects every request in flight and queued, and ends the thread: the next request starts a fresh one. */
  #fail(e: VerifierThreadError): void {
    void this.#drop(e)?.terminate();
  }

  /** Rejects every request in flight and queued with `e`; returns the thread, no longer this verifier's. */
  #drop(e: VerifierThreadError): VerifierPort | undefined {
    const port = this.#thread?.port;
    this.#thread = undefined;
    const jobs = [...(this.#inFlight?.jobs ?? []), ...this.#pending.splice(0)];
    this.#inFlight = undefined;
    for (const j of jobs) j.reject(e);
    return port;
  }
}

/** The process's thread, made on first use: a process that never checks a signature on it makes none. */
let _shared: Ed25519Thread | undefined;

/**
 * Verifies `signature` over exactly `message` with the raw public key on the process's Ed25519 thread (see the
 * module doc): resolves the verdict, rejects only with {@link VerifierThreadError}.
 */
export function verifyEd25519Batched(
  publicKey: Uint8Array,
  signature: Uint8Array,
  message: Uint8Array,
): Promise<boolean> {
  return (_shared ??= new Ed25519Thread()).verify(publicKey, signature, message);
}

/** The process's Ed25519 thread's figures (for `bench:commands`). */
export function ed25519ThreadStats(): VerifierStats {
  return (_shared ??= new Ed25519Thread()).stats;
}
