import assert from "node:assert/strict";
import {
  CTRL,
  Ed25519Thread,
  MAX_BATCH,
  REQUEST_BYTES,
  spawnVerifierThread,
  type VerifierPort,
  type VerifierShared,
  VerifierThreadError,
} from "./ed25519_thread.ts";
import { generateSigningKeyPair, signEd25519 } from "./ed25519.ts";

type Event = "error" | "exit";

/**
 * A thread played by the test over the real shared memory: it reads what was handed over, answers when the test says,
 * and records its ref count.
 */
class FakePort implements VerifierPort {
  readonly listeners = new Map<Event, ((value: unknown) => void)[]>();
  readonly ctrl: Int32Array;
  readonly data: Uint8Array;
  refs = 0;
  terminated = false;

  constructor(shared: VerifierShared) {
    this.ctrl = new Int32Array(shared.ctrl);
    this.data = new Uint8Array(shared.data);
  }
  on(event: Event, listener: (value: unknown) => void): unknown {
    this.listeners.set(event, [...(this.listeners.get(event) ?? []), listener]);
    return this;
  }
  /** As a real thread does while referenced, an interval holds the event loop open (the answer is no event of it). */
  #keep: ReturnType<typeof setInterval> | undefined;
  ref(): void {
    this.refs = 1;
    this.#keep ??= setInterval(() => {}, 1 << 30);
  }
  unref(): void {
    this.refs = 0;
    clearInterval(this.#keep);
    this.#keep = undefined;
  }
  terminate(): Promise<number> {
    this.terminated = true;
    this.unref();
    return Promise.resolve(1);
  }
  emit(event: Event, value: unknown): void {
    for (const l of this.listeners.get(event) ?? []) l(value);
  }
  /** The batch handed over last: its number and its packed requests. */
  get handed(): { seq: number; requests: { key: Uint8Array; sig: Uint8Array; msg: Uint8Array }[]; length: number } {
    const n = Atomics.load(this.ctrl, CTRL.count);
    const length = Atomics.load(this.ctrl, CTRL.length);
    const view = new DataView(this.data.buffer);
    const requests = [];
    let o = 0;
    for (let i = 0; i < n; i++) {
      const len = view.getUint32(o + 96);
      requests.push({
        key: this.data.slice(o, o + 32),
        sig: this.data.slice(o + 32, o + 96),
        msg: this.data.slice(o + 100, o + 100 + len),
      });
      o += 100 + len;
    }
    assert.equal(o, length, "the requests fill exactly the length handed over");
    return { seq: Atomics.load(this.ctrl, CTRL.request), requests, length };
  }
  /** Answers the batch handed over last with `verdicts` (as the batch number `seq`, by default its own). */
  answer(verdicts: number[], seq = Atomics.load(this.ctrl, CTRL.request)): void {
    this.data.set(verdicts, REQUEST_BYTES);
    Atomics.store(this.ctrl, CTRL.answer, seq);
    Atomics.notify(this.ctrl, CTRL.answer);
  }
}

function fakeThread(): { thread: Ed25519Thread; ports: FakePort[] } {
  const ports: FakePort[] = [];
  const thread = new Ed25519Thread((shared) => {
    const p = new FakePort(shared);
    ports.push(p);
    return Promise.resolve(p);
  });
  return { thread, ports };
}

const KEY = new Uint8Array(32).fill(1);
const SIG = new Uint8Array(64).fill(2);
const msg = (i: number) => new TextEncoder().encode(`message ${i}`);

/** Lets the thread's start and the end-of-turn send happen. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

async function rejection(p: Promise<unknown>): Promise<VerifierThreadError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof VerifierThreadError) return e;
    throw e;
  }
  assert.fail("the verification resolved a verdict");
}

Deno.test("requests of one turn are handed over as one batch: key, signature, length, message", async () => {
  const { thread, ports } = fakeThread();
  const verdicts = [0, 1, 2].map((i) => thread.verify(KEY, SIG, msg(i)));
  await settle();
  assert.equal(ports.length, 1, "the thread started on the first request");
  const port = ports[0]!;
  const handed = port.handed;
  assert.equal(handed.seq, 1);
  assert.deepEqual(handed.requests, [0, 1, 2].map((i) => ({ key: KEY, sig: SIG, msg: msg(i) })));
  assert.equal(port.refs, 1, "the thread holds the process open while a batch is with it");
  port.answer([1, 0, 1]);
  assert.deepEqual(await Promise.all(verdicts), [true, false, true]);
  assert.equal(port.refs, 0, "and lets it go once none is");
  assert.deepEqual(thread.stats, { verifies: 3, batches: 1 });
});

Deno.test("while a batch is with the thread, later requests wait and go together once its verdicts are in", async () => {
  const { thread, ports } = fakeThread();
  const first = thread.verify(KEY, SIG, msg(0));
  await settle();
  const port = ports[0]!;
  const later = [1, 2, 3].map((i) => thread.verify(KEY, SIG, msg(i)));
  await settle();
  assert.equal(port.handed.seq, 1, "nothing more is handed over while a batch is in flight");
  port.answer([1]);
  assert.equal(await first, true);
  assert.equal(port.handed.seq, 2);
  assert.deepEqual(port.handed.requests.map((r) => r.msg), [1, 2, 3].map(msg));
  port.answer([1, 1, 0]);
  assert.deepEqual(await Promise.all(later), [true, true, false]);
  assert.deepEqual(thread.stats, { verifies: 4, batches: 2 });
});

Deno.test(`a batch carries at most ${MAX_BATCH} requests and ${REQUEST_BYTES} bytes; the rest follow in the next`, async () => {
  const { thread, ports } = fakeThread();
  const all = Array.from({ length: MAX_BATCH + 1 }, (_, i) => thread.verify(KEY, SIG, msg(i)));
  await settle();
  const port = ports[0]!;
  assert.equal(port.handed.requests.length, MAX_BATCH);
  port.answer(Array(MAX_BATCH).fill(1));
  assert.equal((await Promise.all(all.slice(0, MAX_BATCH))).every((v) => v), true);
  assert.equal(port.handed.requests.length, 1);
  port.answer([0]);
  assert.equal(await all.at(-1), false);
  // Two requests of 60% of the area each go one per batch.
  const big = (i: number) => new Uint8Array(Math.floor(REQUEST_BYTES * 0.6)).fill(i);
  const two = [thread.verify(KEY, SIG, big(1)), thread.verify(KEY, SIG, big(2))];
  await settle();
  assert.deepEqual(port.handed.requests.map((r) => r.msg[0]), [1]);
  port.answer([1]);
  assert.equal(await two[0], true);
  assert.deepEqual(port.handed.requests.map((r) => r.msg[0]), [2]);
  port.answer([1]);
  assert.equal(await two[1], true);
});

Deno.test("a message too large for the shared area is verified by WebCrypto, with the same verdict", async () => {
  const { thread, ports } = fakeThread();
  const kp = await generateSigningKeyPair();
  const huge = new Uint8Array(REQUEST_BYTES).fill(9);
  const sig = await signEd25519(kp.privateKey, huge);
  assert.equal(await thread.verify(kp.publicKey, sig, huge), true);
  const flipped = sig.slice();
  flipped[0]! ^= 1;
  assert.equal(await thread.verify(kp.publicKey, flipped, huge), false);
  assert.equal(ports.length, 0, "no thread was needed");
});

Deno.test("a failing thread fails its checks closed (VerifierThreadError, never a verdict), and the next request starts a fresh thread", async (t) => {
  const cases: [string, (p: FakePort) => void][] = [
    ["the thread throws", (p) => p.emit("error", new Error("boom"))],
    ["the thread exits", (p) => p.emit("exit", 1)],
    ["it answers with another batch's number", (p) => p.answer([1, 1], Atomics.load(p.ctrl, CTRL.request) + 1)],
    ["it answers a verdict that is neither 0 nor 1", (p) => p.answer([1, 2])],
  ];
  for (const [name, fail] of cases) {
    await t.step(name, async () => {
      const { thread, ports } = fakeThread();
      const inFlight = [thread.verify(KEY, SIG, msg(0)), thread.verify(KEY, SIG, msg(1))];
      await settle();
      const queued = thread.verify(KEY, SIG, msg(2));
      await settle();
      fail(ports[0]!);
      for (const p of [...inFlight, queued]) assert.match((await rejection(p)).message, /Ed25519 verifier thread/);
      assert.ok(ports[0]!.terminated, "the failed thread is ended");
      const next = thread.verify(KEY, SIG, msg(3));
      await settle();
      assert.equal(ports.length, 2, "a fresh thread");
      assert.equal(ports[1]!.handed.seq, 1);
      ports[1]!.answer([1]);
      assert.equal(await next, true);
      // What the old thread does now is not heard.
      ports[0]!.answer([1, 1], 2);
      ports[0]!.emit("error", new Error("late"));
      const after = thread.verify(KEY, SIG, msg(4));
      await settle();
      ports[1]!.answer([0]);
      assert.equal(await after, false);
    });
  }
});

Deno.test("a verdict the thread did not write never reads as the last batch's: the batch fails closed", async () => {
  const { thread, ports } = fakeThread();
  const first = [thread.verify(KEY, SIG, msg(0)), thread.verify(KEY, SIG, msg(1))];
  await settle();
  ports[0]!.answer([1, 1]);
  assert.deepEqual(await Promise.all(first), [true, true]);
  const second = [thread.verify(KEY, SIG, msg(2)), thread.verify(KEY, SIG, msg(3))];
  await settle();
  ports[0]!.answer([0]); // the second request's verdict is left unwritten; the last batch wrote 1 there
  for (const p of second) await rejection(p);
});

Deno.test("a thread that does not start, or a closed verifier, fails those checks closed", async (t) => {
  await t.step("the thread cannot be started, and the next request tries again", async () => {
    let spawns = 0;
    const thread = new Ed25519Thread(() => {
      spawns++;
      return Promise.reject(new Deno.errors.NotCapable("no threads"));
    });
    const e = await rejection(thread.verify(KEY, SIG, msg(0)));
    assert.ok(e.cause instanceof Deno.errors.NotCapable);
    await rejection(thread.verify(KEY, SIG, msg(1)));
    assert.equal(spawns, 2);
  });
  await t.step("after close(), every request is refused", async () => {
    const { thread, ports } = fakeThread();
    const p = thread.verify(KEY, SIG, msg(0));
    await settle();
    await thread.close();
    await rejection(p);
    assert.ok(ports[0]!.terminated);
    await rejection(thread.verify(KEY, SIG, msg(1)));
  });
});

Deno.test("a real thread that crashes on a batch fails it closed; a fresh real thread then verifies", async () => {
  const kp = await generateSigningKeyPair();
  const m = msg(7);
  const sig = await signEd25519(kp.privateKey, m);
  let crash = true;
  const thread = new Ed25519Thread(async (shared) => {
    if (!crash) return await spawnVerifierThread(shared);
    const { Worker } = await import("node:worker_threads");
    return new Worker(
      `const c = new Int32Array(require("node:worker_threads").workerData.ctrl);
       Atomics.wait(c, ${CTRL.request}, 0);
       throw new Error("verifier crashed");`,
      { eval: true, workerData: shared },
    );
  });
  try {
    const e = await rejection(thread.verify(kp.publicKey, sig, m));
    assert.match(e.message, /failed|exited/);
    crash = false;
    assert.equal(await thread.verify(kp.publicKey, sig, m), true);
  } finally {
    await thread.close();
  }
});
