// The parser over real `nvidia-smi -q -x` output captured on real machines (fixtures/nvidia/captured/, sources in
// fixtures/README.md), not over the project's own renderer: a misreading shared by renderer and parser fails here.
// Each expected value below was read from the capture by hand.
import assert from "node:assert/strict";
import { parseSmiXml } from "./smi_xml.ts";

const dir = new URL("../../fixtures/nvidia/captured/", import.meta.url).pathname;
const parse = (f: string) => parseSmiXml(Deno.readTextFileSync(dir + f));

Deno.test("captured A100-SXM4-80GB, driver 535.54.03 (v12 DTD): MIG enabled with four 1g instances", () => {
  const inv = parse("telegraf-a100-sxm4-v12.xml");
  assert.equal(inv.driverVersion, "535.54.03");
  assert.equal(inv.cudaVersion, "12.2");
  // The capture says attached_gpus 4 but holds one <gpu> element: the parser counts the elements it has.
  assert.equal(inv.gpus.length, 1);
  const g = inv.gpus[0]!;
  assert.equal(g.uuid, "GPU-513536b6-7d19-9063-b049-1e69664bb298");
  assert.equal(g.pciBusId, "00000000:01:00.0");
  assert.equal(g.minorNumber, 1);
  assert.equal(g.productName, "NVIDIA A100-SXM4-80GB");
  assert.equal(g.migMode, "Enabled");
  assert.equal(g.migPending, "Enabled");
  assert.deepEqual(g.migInstances, [
    { gi: 3, ci: 0, index: 0 },
    { gi: 4, ci: 0, index: 1 },
    { gi: 5, ci: 0, index: 2 },
    { gi: 6, ci: 0, index: 3 },
  ]);
  assert.equal(g.eccVolatileUncorrectable, 0);
  assert.equal(g.remap, undefined, "<remapped_rows>N/A</remapped_rows> is absent, not 'no remap'");
  assert.equal(g.resetRequired, false);
  assert.equal(g.temperatureC, 27);
  assert.equal(g.powerW, 67.03);
});

Deno.test("captured A10G, driver 515.105.01 (v11 DTD): MIG N/A, row remapper present and clean", () => {
  const g = parse("telegraf-a10g.xml").gpus[0]!;
  assert.equal(g.uuid, "GPU-9a9a6c50-2a47-2f51-a902-b82c3b127e94");
  assert.equal(g.pciBusId, "00000000:00:1E.0");
  assert.equal(g.productName, "NVIDIA A10G");
  assert.equal(g.migMode, "N/A");
  assert.deepEqual(g.migInstances, []);
  assert.deepEqual(g.remap, { pending: false, failed: false });
  assert.equal(g.eccVolatileUncorrectable, 0);
  assert.equal(g.powerW, 25.58, "v11 power_readings/power_draw");
});

Deno.test("captured Tesla T4, driver 515.105.01 (v11 DTD): retired pages, no row remapper", () => {
  const inv = parse("telegraf-tesla-t4.xml");
  assert.equal(inv.driverVersion, "515.105.01");
  const g = inv.gpus[0]!;
  assert.equal(g.uuid, "GPU-d37e67a5-91dd-3774-a5cb-99096249601a");
  assert.equal(g.productName, "Tesla T4");
  assert.equal(g.migMode, "N/A");
  assert.equal(g.remap, undefined);
  assert.equal(g.eccVolatileUncorrectable, 0);
  assert.equal(g.temperatureC, 40);
  assert.equal(g.powerW, 26.78);
});

Deno.test("captured RTX 3080, driver 595.58.03 (v13 DTD): instant_power_draw, recovery action, ECC N/A stays absent", () => {
  const inv = parse("telegraf-rtx-3080-v13.xml");
  assert.equal(inv.driverVersion, "595.58.03");
  assert.equal(inv.cudaVersion, "13.2");
  const g = inv.gpus[0]!;
  assert.equal(g.uuid, "GPU-19d6d965-2acc-f646-00f8-4c76979aabb4");
  assert.equal(g.pciBusId, "00000000:0C:00.0");
  assert.equal(g.productName, "NVIDIA GeForce RTX 3080");
  assert.equal(g.recoveryAction, "None");
  assert.equal(g.eccVolatileUncorrectable, undefined, "every volatile counter is N/A on this card");
  assert.equal(g.temperatureC, 27);
  // v13 dropped gpu_power_readings/power_draw for instant_power_draw (142.33 W) and average_power_draw (139.62 W).
  assert.equal(g.powerW, 142.33);
});
