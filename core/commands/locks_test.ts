import assert from "node:assert/strict";
import { HOST_LOCK, LockWaitAborted, ResourceLocks } from "./locks.ts";

const tick = () => new Promise((r) => setTimeout(r, 0));

Deno.test("ResourceLocks: two holders of one GPU run one after the other, in arrival order", async () => {
  const locks = new ResourceLocks();
  const order: string[] = [];
  const r1 = await locks.acquire(["gpu:GPU-1"]);
  const p2 = locks.acquire(["gpu:GPU-1", "disk:/dev/sda"]).then((r) => (order.push("second"), r));
  const p3 = locks.acquire(["gpu:GPU-1"]).then((r) => (order.push("third"), r));
  const other = await locks.acquire(["gpu:GPU-2"]);
  await tick();
  assert.deepEqual(order, [], "GPU-1 is held");
  r1();
  const r2 = await p2;
  await tick();
  assert.deepEqual(order, ["second"]);
  r2();
  (await p3)();
  other();
  assert.equal(locks.isHeld("gpu:GPU-1"), false);
  assert.equal(locks.isHeld("disk:/dev/sda"), false);
});

Deno.test("ResourceLocks: an aborted wait gives back what it took and leaves the queue", async () => {
  const locks = new ResourceLocks();
  const r1 = await locks.acquire(["b"]);
  const ac = new AbortController();
  const p = locks.acquire(["a", "b"], ac.signal);
  await tick();
  assert.equal(locks.isHeld("a"), true);
  ac.abort();
  await assert.rejects(p, LockWaitAborted);
  assert.equal(locks.isHeld("a"), false);
  r1();
  assert.equal(locks.isHeld("b"), false);
});

Deno.test("ResourceLocks: the host lock waits for every holder and blocks newcomers until released", async () => {
  const locks = new ResourceLocks();
  const r1 = await locks.acquire(["gpu:GPU-1"]);
  let hostGot = false;
  const hp = locks.acquire([HOST_LOCK]).then((r) => (hostGot = true, r));
  let laterGot = false;
  const lp = locks.acquire(["gpu:GPU-2"]).then((r) => (laterGot = true, r));
  await tick();
  assert.equal(hostGot, false);
  r1();
  const hr = await hp;
  await tick();
  assert.equal(laterGot, false, "a newcomer waits while the host lock is held");
  hr();
  (await lp)();
  assert.equal(laterGot, true);
});

Deno.test("ResourceLocks: tryAcquire takes free keys at once and takes nothing when it would have to wait", () => {
  const locks = new ResourceLocks();
  const r1 = locks.tryAcquire(["gpu:GPU-1", "disk:/dev/sda", "gpu:GPU-1"]);
  assert.ok(r1, "free keys are taken without waiting");
  assert.equal(locks.isHeld("gpu:GPU-1"), true);
  assert.equal(locks.isHeld("disk:/dev/sda"), true);
  assert.equal(locks.tryAcquire(["gpu:GPU-2", "gpu:GPU-1"]), undefined, "one held key: nothing is taken");
  assert.equal(locks.isHeld("gpu:GPU-2"), false);
  assert.equal(locks.tryAcquire([HOST_LOCK]), undefined, "the host lock always goes through acquire");
  const none = locks.tryAcquire([]);
  assert.ok(none, "a command without keys needs no wait");
  r1();
  r1(); // a second release changes nothing
  assert.equal(locks.isHeld("gpu:GPU-1"), false);
  assert.equal(locks.isHeld("disk:/dev/sda"), false);
  none();
});

Deno.test("ResourceLocks: a holder without keys still holds the host lock back, and tryAcquire waits behind it", async () => {
  const locks = new ResourceLocks();
  const none = locks.tryAcquire([])!;
  let hostGot = false;
  const hp = locks.acquire([HOST_LOCK]).then((r) => (hostGot = true, r));
  await tick();
  assert.equal(hostGot, false, "the host lock waits for the keyless holder");
  assert.equal(locks.tryAcquire([]), undefined, "a host waiter blocks newcomers");
  none();
  const hr = await hp;
  assert.equal(locks.tryAcquire(["gpu:GPU-1"]), undefined, "the host lock is held");
  hr();
  const r = locks.tryAcquire(["gpu:GPU-1"]);
  assert.ok(r);
  r();
});
