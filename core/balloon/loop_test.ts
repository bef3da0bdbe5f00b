import assert from "node:assert/strict";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";
import { createLogger } from "../log/mod.ts";
import { FakeBalloons, ScriptedPressure } from "./fake_balloons.ts";
import { BALLOON_INTERVAL_MS, BalloonLoop } from "./loop.ts";
import type { BalloonCandidate } from "./port.ts";

const GiB = 1024 ** 3;
const TOTAL = 64 * GiB;
const calm = { memTotalBytes: TOTAL, memAvailableBytes: 40 * GiB, someAvg10: 0 };
const squeezed = { memTotalBytes: TOTAL, memAvailableBytes: 2 * GiB, someAvg10: 30 };

function setup(candidates: BalloonCandidate[], lines: string[] = []) {
  const clock = new FakeClock();
  const balloons = new FakeBalloons();
  const pressure = new ScriptedPressure(calm);
  const log = createLogger({ level: "info", destination: { write: (l) => void lines.push(l) } });
  const loop = new BalloonLoop({
    pressure,
    candidates: () => candidates,
    port: (rt) => rt === "libvirt-kvm" ? balloons : undefined,
    floorPercent: 50,
    clock,
    log,
  });
  return { clock, balloons, pressure, loop };
}

Deno.test("BalloonLoop: every 30 s it inflates under pressure, reports what it reclaimed, and deflates when the pressure ends", async () => {
  const c: BalloonCandidate[] = [{ id: "a", runtime: "libvirt-kvm", memoryBytes: 16 * GiB }];
  const { clock, balloons, pressure, loop } = setup(c);
  balloons.add("a", 16 * GiB, 1 * GiB);
  pressure.now = squeezed;
  loop.start();
  try {
    await clock.advance(BALLOON_INTERVAL_MS - 1);
    assert.equal(pressure.reads, 0, "no pass before the interval");
    await clock.advance(1);
    assert.equal(pressure.reads, 1);
    assert.equal(balloons.guests.get("a")!.currentBytes, 12 * GiB, "a quarter of its memory in one pass");
    assert.deepEqual(loop.reclaimed(), [{ instance: "a", bytes: 4 * GiB }]);
    await clock.advance(BALLOON_INTERVAL_MS);
    assert.equal(balloons.guests.get("a")!.currentBytes, 8 * GiB, "down to its 50% floor");
    await clock.advance(BALLOON_INTERVAL_MS);
    assert.equal(balloons.guests.get("a")!.currentBytes, 8 * GiB, "never below the floor");
    pressure.now = calm;
    await clock.advance(BALLOON_INTERVAL_MS);
    assert.equal(balloons.guests.get("a")!.currentBytes, 12 * GiB, "a step back");
    await clock.advance(BALLOON_INTERVAL_MS);
    assert.equal(balloons.guests.get("a")!.currentBytes, 16 * GiB);
    assert.deepEqual(loop.reclaimed(), [{ instance: "a", bytes: 0 }]);
  } finally {
    await loop.stop();
  }
  const reads = pressure.reads;
  await clock.advance(10 * BALLOON_INTERVAL_MS);
  assert.equal(pressure.reads, reads, "no pass after stop()");
});

Deno.test("BalloonLoop: a guest answering ErrNoBalloon is read once and never resized; the others still are", async () => {
  const c: BalloonCandidate[] = [
    { id: "plain", runtime: "libvirt-kvm", memoryBytes: 8 * GiB },
    { id: "b", runtime: "libvirt-kvm", memoryBytes: 8 * GiB },
    { id: "other", runtime: "sim", memoryBytes: 8 * GiB },
  ];
  const lines: string[] = [];
  const { balloons, pressure, loop } = setup(c, lines);
  balloons.add("plain", 8 * GiB, 0).add("b", 8 * GiB, 0);
  balloons.without.add("plain");
  pressure.now = squeezed;
  await loop.pass();
  await loop.pass();
  assert.deepEqual(balloons.calls.filter((x) => x.includes("plain")), ["read plain"]);
  assert.equal(balloons.guests.get("b")!.currentBytes, 4 * GiB);
  assert.deepEqual(loop.reclaimed().map((r) => r.instance), ["b"], "no figure for a guest without a balloon");
  assert.ok(lines.some((l) => /no balloon device/.test(l) && /"instance":"plain"/.test(l)));
});

Deno.test("BalloonLoop: host readings that fail skip the pass; a host without PSI balloons on MemAvailable alone", async () => {
  const c: BalloonCandidate[] = [{ id: "a", runtime: "libvirt-kvm", memoryBytes: 8 * GiB }];
  const lines: string[] = [];
  const { balloons, pressure, loop } = setup(c, lines);
  balloons.add("a", 8 * GiB, 0);
  pressure.fail = new Error("helper unavailable");
  assert.equal(await loop.pass(), undefined);
  assert.deepEqual(balloons.calls, []);
  assert.ok(lines.some((l) => /pass skipped/.test(l) && /helper unavailable/.test(l)));
  pressure.fail = undefined;
  pressure.now = { memTotalBytes: TOTAL, memAvailableBytes: 1 * GiB, someAvg10: null };
  assert.equal((await loop.pass())?.state, "pressure");
  assert.equal(balloons.guests.get("a")!.currentBytes, 6 * GiB);
  pressure.now = { memTotalBytes: TOTAL, memAvailableBytes: 10 * GiB, someAvg10: null };
  assert.equal((await loop.pass())?.state, "between");
  assert.equal(lines.filter((l) => /no memory PSI/.test(l)).length, 1, "said once");
});

Deno.test("BalloonLoop refuses a floor outside 10 to 100%", () => {
  const clock = new FakeClock();
  for (const floorPercent of [9, 101, Number.NaN]) {
    assert.throws(
      () =>
        new BalloonLoop({
          pressure: new ScriptedPressure(calm),
          candidates: () => [],
          port: () => undefined,
          floorPercent,
          clock,
          log: createLogger({ level: "silent" }),
        }),
      RangeError,
    );
  }
});
