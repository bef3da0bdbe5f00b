import assert from "node:assert/strict";
import { realClock, repeat, signalTimer, wallNanos } from "./clock.ts";
import { FakeClock } from "../fixtures/clock/fake_clock.ts";

Deno.test("repeat() runs every interval until cancelled, including a cancel from inside the callback", async () => {
  const c = new FakeClock();
  const at: number[] = [];
  const r = repeat(c, 100, () => {
    at.push(c.monotonic());
    if (at.length === 3) r.cancel();
  });
  await c.advance(1000);
  assert.deepEqual(at, [100, 200, 300]);
  assert.equal(c.pending, 0);
  const seen: number[] = [];
  const r2 = repeat(c, 50, () => seen.push(c.monotonic()));
  await c.advance(120);
  r2.cancel();
  await c.advance(1000);
  assert.deepEqual(seen, [1050, 1100]);
});

Deno.test("wallNanos() is the clock's wall time in nanoseconds, at millisecond precision", async () => {
  const c = new FakeClock(1_700_000_000_123);
  assert.equal(wallNanos(c), 1_700_000_000_123_000_000n);
  await c.advance(2);
  assert.equal(wallNanos(c), 1_700_000_000_125_000_000n);
  const before = BigInt(Date.now()) * 1_000_000n;
  const real = wallNanos();
  assert.ok(real >= before && real <= BigInt(Date.now()) * 1_000_000n, "the default is the real clock");
});

Deno.test("signalTimer() runs fn once after ms; cancel() before it falls due stops it", async () => {
  const fired: string[] = [];
  const cancelled = signalTimer(1, () => fired.push("cancelled"));
  cancelled.cancel();
  const t0 = performance.now();
  await new Promise<void>((r) => signalTimer(20, () => (fired.push("armed"), r())));
  assert.ok(performance.now() - t0 >= 19, "not before its time");
  await new Promise<void>((r) => realClock.setRareTimer(5, r)); // the cancelled one's deadline has passed too
  assert.deepEqual(fired, ["armed"]);
  signalTimer(Number.NaN, () => {}).cancel(); // a delay setTimeout takes is taken, not refused
  signalTimer(-1, () => {}).cancel();
  signalTimer(2 ** 40, () => {}).cancel();
});

Deno.test("an armed signalTimer() holds the process open until it fires, as a setTimeout does; a cancelled one does not", async () => {
  const url = new URL("./clock.ts", import.meta.url).href;
  const run = async (script: string) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", `import { signalTimer } from "${url}"; ${script}`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    return new TextDecoder().decode(out.stdout).trim();
  };
  assert.equal(await run(`signalTimer(50, () => console.log("fired"));`), "fired");
  // Were the cancelled one still holding the loop, this would take an hour: the test's hang is the failure.
  assert.equal(
    await run(`signalTimer(3_600_000, () => console.log("fired")).cancel(); console.log("exited");`),
    "exited",
  );
});
