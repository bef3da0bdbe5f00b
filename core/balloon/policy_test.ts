import assert from "node:assert/strict";
import { BALLOON_PAGE_BYTES, balloonFloorBytes, type BalloonGuest, balloonSteps, type HostPressure } from "./policy.ts";

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

const host = (availGiB: number, psi: number | null = 0): HostPressure => ({
  memTotalBytes: 100 * GiB,
  memAvailableBytes: availGiB * GiB,
  someAvg10: psi,
});
const guest = (id: string, memGiB: number, currentGiB: number, usedGiB: number | null): BalloonGuest => ({
  id,
  memoryBytes: memGiB * GiB,
  currentBytes: currentGiB * GiB,
  usedBytes: usedGiB === null ? null : usedGiB * GiB,
});
const steps = (d: ReturnType<typeof balloonSteps>) =>
  d.steps.map((s) => `${s.id} ${s.fromBytes / GiB}->${s.toBytes / GiB}`);

interface Row {
  readonly seedRow: string;
  readonly name: string;
  readonly host: HostPressure;
  readonly guests: readonly BalloonGuest[];
  readonly floorPercent?: number;
  readonly state: "pressure" | "relaxed" | "between";
  readonly want: readonly string[];
}

// One group per row of the seed's table (000 §Memory ballooning), then the floor rule.
const ROWS: readonly Row[] = [
  {
    seedRow: "Less than 10% of memory available",
    name: "inflates to cover the shortfall below 10%, from the guest with the most memory above its floor first",
    host: host(7),
    // a: 16 GiB, floor 8 (50%) -> 8 above; b: 8 GiB, floor 4 -> 4 above. Shortfall 3 GiB, all from a.
    guests: [guest("b", 8, 8, 1), guest("a", 16, 16, 1)],
    state: "pressure",
    want: ["a 16->13"],
  },
  {
    seedRow: "Less than 10% of memory available",
    name: "at most a quarter of a guest's memory per pass; the rest from the next guest",
    host: host(2),
    // shortfall 8 GiB: a gives 4 (a quarter of 16), b gives 2 (a quarter of 8), c gives 2 (of its 2 above its floor)
    guests: [guest("a", 16, 16, 1), guest("b", 8, 8, 1), guest("c", 8, 6, 1)],
    state: "pressure",
    want: ["a 16->12", "b 8->6", "c 6->4"],
  },
  {
    seedRow: "Less than 10% of memory available",
    name: "a guest at its floor gives nothing; a shortfall larger than the guests' room is taken as far as it goes",
    host: host(0),
    guests: [guest("a", 8, 4, 1), guest("b", 8, 8, 1)],
    state: "pressure",
    want: ["b 8->6"],
  },
  {
    seedRow: "or a memory stall of 10% or more",
    name: "a stall with memory available still reclaims at least 2% of host memory",
    host: host(50, 10),
    guests: [guest("a", 16, 16, 1)],
    state: "pressure",
    want: ["a 16->14"],
  },
  {
    seedRow: "or a memory stall of 10% or more",
    name: "stalled and short: the larger of the shortfall and 2%",
    host: host(5, 25),
    guests: [guest("a", 32, 32, 1)],
    state: "pressure",
    want: ["a 32->27"],
  },
  {
    seedRow: "More than 20% available and no stall",
    name: "deflates every inflated balloon a step (a quarter of the guest's memory), the most inflated first",
    host: host(60),
    guests: [guest("a", 16, 8, 1), guest("b", 8, 7, 1), guest("c", 8, 8, 1)],
    state: "relaxed",
    want: ["a 8->12", "b 7->8"],
  },
  {
    seedRow: "More than 20% available and no stall",
    name: "within what is free above 20%: the last step shrinks to what is left",
    host: host(25),
    guests: [guest("a", 16, 8, 1), guest("b", 16, 10, 1)],
    state: "relaxed",
    want: ["a 8->12", "b 10->11"],
  },
  {
    seedRow: "More than 20% available and no stall",
    name: "a stall below 10% is not relaxed: more than 20% available with a stall inflates instead",
    host: host(30, 12),
    guests: [guest("a", 16, 12, 1)],
    state: "pressure",
    want: ["a 12->10"],
  },
  {
    seedRow: "In between",
    name: "between 10% and 20% available without a stall leaves the balloons as they are",
    host: host(15),
    guests: [guest("a", 16, 8, 1), guest("b", 16, 16, 1)],
    state: "between",
    want: [],
  },
  {
    seedRow: "In between",
    name: "exactly 10% is not short, exactly 20% is not more than 20%",
    host: host(10),
    guests: [guest("a", 16, 8, 1)],
    state: "between",
    want: [],
  },
  {
    seedRow: "In between",
    name: "exactly 20% available",
    host: host(20, 9.99),
    guests: [guest("a", 16, 8, 1)],
    state: "between",
    want: [],
  },
  {
    seedRow: "A guest never goes below its floor",
    name: "balloon_floor_percent of its memory (70%)",
    host: host(0),
    floorPercent: 70,
    guests: [guest("a", 10, 10, 1)],
    state: "pressure",
    want: ["a 10->7.5"],
  },
  {
    seedRow: "A guest never goes below its floor",
    name: "what it uses plus 10% of its memory when that is higher",
    host: host(0),
    guests: [guest("a", 10, 10, 8.5)],
    state: "pressure",
    want: ["a 10->9.5"],
  },
  {
    seedRow: "A guest never goes below its floor",
    name: "a guest without a usage reading counts as using all its memory: nothing is taken from it",
    host: host(0),
    guests: [guest("a", 16, 16, null), guest("b", 8, 8, 1)],
    state: "pressure",
    want: ["b 8->6"],
  },
  {
    seedRow: "PSI absent (judgement call)",
    name: "a host without PSI is never stalled: the table runs on MemAvailable alone",
    host: host(50, null),
    guests: [guest("a", 16, 8, 1)],
    state: "relaxed",
    want: ["a 8->12"],
  },
];

Deno.test("balloonSteps() follows the seed's table row by row", async (t) => {
  for (const r of ROWS) {
    await t.step(`${r.seedRow}: ${r.name}`, () => {
      const d = balloonSteps(r.host, r.guests, r.floorPercent ?? 50);
      assert.equal(d.state, r.state);
      assert.deepEqual(steps(d), r.want);
      for (const s of d.steps) {
        const g = r.guests.find((x) => x.id === s.id)!;
        assert.ok(s.toBytes % BALLOON_PAGE_BYTES === 0, "whole pages");
        assert.ok(s.toBytes <= g.memoryBytes, "never above its memory");
        if (d.state === "pressure") {
          assert.ok(s.toBytes >= balloonFloorBytes(g, r.floorPercent ?? 50), "never below its floor");
          assert.ok(g.currentBytes - s.toBytes <= g.memoryBytes / 4, "at most a quarter per pass");
        }
      }
    });
  }
});

Deno.test("balloonSteps() moves in whole pages and never crosses a floor that is not page-aligned", () => {
  const g: BalloonGuest = { id: "a", memoryBytes: 1000 * MiB + 512, currentBytes: 1000 * MiB + 512, usedBytes: 0 };
  const d = balloonSteps({ memTotalBytes: 10 * GiB, memAvailableBytes: 0, someAvg10: 50 }, [g], 99);
  assert.equal(d.steps.length, 1);
  const s = d.steps[0]!;
  assert.equal(s.toBytes % BALLOON_PAGE_BYTES, 0);
  assert.ok(s.toBytes >= balloonFloorBytes(g, 99));
});

Deno.test("balloonSteps(): a guest taken down to a floor between pages is left alone at the next pass (the device keeps whole pages)", () => {
  // 64 MiB using 48: its floor is 48 + 6.4 MiB, which is not a whole number of 4 KiB pages.
  const g: BalloonGuest = { id: "a", memoryBytes: 64 * MiB, currentBytes: 64 * MiB, usedBytes: 48 * MiB };
  const host = { memTotalBytes: 10 * GiB, memAvailableBytes: 0, someAvg10: 50 };
  const first = balloonSteps(host, [g], 50).steps;
  assert.equal(first.length, 1);
  const to = first[0]!.toBytes;
  assert.equal(to % BALLOON_PAGE_BYTES, 0, "a target the balloon device can hold exactly");
  assert.ok(to >= balloonFloorBytes(g, 50) && to - balloonFloorBytes(g, 50) < BALLOON_PAGE_BYTES);
  // What a virtio-balloon leaves the guest: it takes whole pages, a remainder dropped.
  const left = g.memoryBytes - Math.floor((g.memoryBytes - to) / BALLOON_PAGE_BYTES) * BALLOON_PAGE_BYTES;
  assert.deepEqual(balloonSteps(host, [{ ...g, currentBytes: left }], 50).steps, [], "at its floor: nothing to move");
});
