import assert from "node:assert/strict";
import { ProcMemoryPressure } from "./memory_pressure.ts";

Deno.test("ProcMemoryPressure reads a proc tree's meminfo and PSI; without pressure/memory the stall is null", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-psi-" });
  try {
    await Deno.writeTextFile(`${dir}/meminfo`, "MemTotal: 1000 kB\nMemFree: 10 kB\nMemAvailable: 50 kB\n");
    assert.deepEqual(await new ProcMemoryPressure(dir).read(), {
      memTotalBytes: 1000 * 1024,
      memAvailableBytes: 50 * 1024,
      someAvg10: null,
    });
    await Deno.mkdir(`${dir}/pressure`);
    await Deno.writeTextFile(`${dir}/pressure/memory`, "some avg10=4.20 avg60=1.00 avg300=0.00 total=9\n");
    assert.equal((await new ProcMemoryPressure(dir).read()).someAvg10, 4.2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const hasProc = (() => {
  try {
    Deno.statSync("/proc/meminfo");
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
})();
if (!hasProc) console.log("memory_pressure_test: no /proc/meminfo on this host; the real-procfs test is skipped");

Deno.test({
  name: "ProcMemoryPressure reads this host's /proc (PSI when the kernel has it)",
  ignore: !hasProc,
  fn: async () => {
    const r = await new ProcMemoryPressure().read();
    assert.ok(r.memTotalBytes > 0 && r.memAvailableBytes <= r.memTotalBytes);
    let psi = true;
    try {
      await Deno.readTextFile("/proc/pressure/memory");
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotSupported)) throw e;
      psi = false;
    }
    assert.equal(r.someAvg10 === null, !psi);
  },
});
