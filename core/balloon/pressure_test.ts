import assert from "node:assert/strict";
import { MAX_MEMINFO_CHARS, parseMemoryPressure } from "./pressure.ts";

const MEMINFO =
  "MemTotal:       16303940 kB\nMemFree:         1203940 kB\nMemAvailable:    8151970 kB\nBuffers: 1 kB\n";
const PSI = "some avg10=12.50 avg60=3.00 avg300=0.50 total=123456\nfull avg10=1.00 avg60=0.00 avg300=0.00 total=10\n";

Deno.test("parseMemoryPressure() reads MemTotal, MemAvailable and PSI's some avg10", () => {
  assert.deepEqual(parseMemoryPressure(MEMINFO, PSI), {
    memTotalBytes: 16303940 * 1024,
    memAvailableBytes: 8151970 * 1024,
    someAvg10: 12.5,
  });
});

Deno.test("parseMemoryPressure() without PSI reads null: the host is never stalled", () => {
  assert.equal(parseMemoryPressure(MEMINFO, undefined).someAvg10, null);
});

Deno.test("parseMemoryPressure() refuses what it cannot balloon against, naming it", async (t) => {
  const rows: [string, string, string | undefined, RegExp][] = [
    ["no MemAvailable (kernel older than 3.14)", "MemTotal: 100 kB\n", undefined, /no MemAvailable line/],
    ["no MemTotal", "MemAvailable: 100 kB\n", undefined, /no MemTotal line/],
    ["a meminfo beyond its bound", "x".repeat(MAX_MEMINFO_CHARS + 1), undefined, /exceeds/],
    ["a PSI file without some avg10", MEMINFO, "full avg10=1.00 avg60=0 avg300=0 total=1\n", /no "some avg10="/],
    ["a stall above 100%", MEMINFO, "some avg10=300.00 avg60=0 avg300=0 total=1\n", /above 100/],
  ];
  for (const [name, meminfo, psi, want] of rows) {
    await t.step(name, () => assert.throws(() => parseMemoryPressure(meminfo, psi), want));
  }
});
