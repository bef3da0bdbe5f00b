import assert from "node:assert/strict";
import { parseSmiList, withMigUuids } from "./smi_list.ts";
import { parseSmiXml, SmiOutputError } from "./smi_xml.ts";
import { XmlRefused } from "./xml.ts";
import { fixtureFiles } from "../../fixtures/nvidia/make_fixtures.ts";

const dir = new URL("../../fixtures/nvidia/", import.meta.url).pathname;
const read = (f: string) => Deno.readTextFileSync(dir + f);

Deno.test("the 8-GPU HGX fixture: UUIDs, PCI bus ids, minors, MIG on two GPUs with MIG UUIDs from -L", () => {
  const inv = withMigUuids(parseSmiXml(read("hgx8_mig2.xml")), parseSmiList(read("hgx8_mig2.list.txt")));
  assert.equal(inv.driverVersion, "550.90.07");
  assert.equal(inv.cudaVersion, "12.4");
  assert.equal(inv.gpus.length, 8);
  assert.deepEqual(inv.gpus.map((g) => g.pciBusId.split(":")[1]), ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]);
  assert.deepEqual(inv.gpus.map((g) => g.minorNumber), [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(inv.gpus.map((g) => g.migMode), [
    "Disabled",
    "Disabled",
    "Enabled",
    "Disabled",
    "Disabled",
    "Enabled",
    "Disabled",
    "Disabled",
  ]);
  const g2 = inv.gpus[2]!;
  assert.equal(g2.uuid, "GPU-b1c2d3e4-f5a6-4b7c-8d9e-0f1a2b3c4d93");
  assert.deepEqual(g2.migInstances, [
    { gi: 1, ci: 0, index: 0, uuid: "MIG-20000001-5b1e-5c6d-9e7f-000000000201", profile: "3g.40gb" },
    { gi: 2, ci: 0, index: 1, uuid: "MIG-20000002-5b1e-5c6d-9e7f-000000000202", profile: "3g.40gb" },
  ]);
  assert.deepEqual(inv.gpus[5]!.migInstances.map((m) => m.gi), [7, 8, 9, 10, 11, 12, 13]);
  assert.ok(inv.gpus[5]!.migInstances.every((m) => m.uuid?.startsWith("MIG-")));
  for (const g of inv.gpus) {
    assert.equal(g.eccVolatileUncorrectable, 0);
    assert.deepEqual(g.remap, { pending: false, failed: false });
    assert.equal(g.numaNode, undefined, "NUMA comes from sysfs, not nvidia-smi");
    assert.equal(g.temperatureC, 31);
    assert.equal(g.resetRequired, false);
    assert.equal(g.recoveryAction, undefined);
    assert.equal(g.powerW, 71.37);
  }
});

Deno.test("without -L the MIG devices are known by gi/ci but carry no UUID", () => {
  const inv = parseSmiXml(read("hgx8_mig2.xml"));
  assert.equal(inv.gpus[2]!.migInstances[0]!.uuid, undefined);
});

Deno.test("the single-GPU fixture", () => {
  const inv = parseSmiXml(read("single.xml"));
  assert.equal(inv.gpus.length, 1);
  assert.equal(inv.gpus[0]!.productName, "NVIDIA A100 80GB PCIe");
  assert.equal(inv.gpus[0]!.pciBusId, "00000000:01:00.0");
  assert.deepEqual(inv.gpus[0]!.migInstances, []);
});

Deno.test("the ECC fixture: volatile uncorrectable errors on the second GPU", () => {
  const inv = parseSmiXml(read("ecc_errors.xml"));
  assert.deepEqual(inv.gpus.map((g) => g.eccVolatileUncorrectable), [0, 3]);
});

Deno.test("the remap fixture: one GPU with a pending remap, one with a failed one", () => {
  const inv = parseSmiXml(read("remap.xml"));
  assert.deepEqual(inv.gpus.map((g) => g.remap), [{ pending: true, failed: false }, { pending: false, failed: true }]);
});

Deno.test("the v11 ECC layout and N/A values", () => {
  const xml = `<?xml version="1.0" ?><!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v11.dtd"><nvidia_smi_log>
<gpu id="00000000:3B:00.0"><mig_mode><current_mig>N/A</current_mig><pending_mig>N/A</pending_mig></mig_mode>
<mig_devices>None</mig_devices><uuid>GPU-11111111-2222-3333-4444-555555555555</uuid><minor_number>N/A</minor_number>
<ecc_errors><volatile><single_bit><device_memory>4</device_memory><total>4</total></single_bit>
<double_bit><device_memory>2</device_memory><total>2</total></double_bit></volatile></ecc_errors>
<remapped_rows>N/A</remapped_rows><gpu_reset_status><reset_required>Yes</reset_required></gpu_reset_status>
<gpu_recovery_action>Reboot</gpu_recovery_action></gpu></nvidia_smi_log>`;
  const g = parseSmiXml(xml).gpus[0]!;
  assert.equal(g.pciBusId, "00000000:3B:00.0", "from the gpu id attribute when <pci> is absent");
  assert.equal(g.migMode, "N/A");
  assert.equal(g.minorNumber, undefined);
  assert.equal(g.eccVolatileUncorrectable, 2);
  assert.equal(g.remap, undefined);
  assert.equal(g.resetRequired, true);
  assert.equal(g.recoveryAction, "Reboot");
});

Deno.test("parseSmiXml refuses what nvidia-smi would not write", () => {
  const bad = [
    "<other/>",
    "<nvidia_smi_log><gpu><uuid>not-a-uuid</uuid></gpu></nvidia_smi_log>",
    '<nvidia_smi_log><gpu id="x"><uuid>GPU-1</uuid></gpu></nvidia_smi_log>',
    '<nvidia_smi_log><gpu id="0000:01:00.0"><uuid>GPU-1</uuid></gpu><gpu id="0000:02:00.0"><uuid>GPU-1</uuid></gpu></nvidia_smi_log>',
    '<nvidia_smi_log><gpu id="0000:01:00.0"><uuid>GPU-1</uuid><mig_devices><mig_device><index>0</index></mig_device></mig_devices></gpu></nvidia_smi_log>',
  ];
  for (const x of bad) assert.throws(() => parseSmiXml(x), SmiOutputError, x);
  assert.throws(() => parseSmiXml('<!DOCTYPE x [<!ENTITY a "b">]><nvidia_smi_log/>'), XmlRefused);
});

Deno.test("the committed fixtures are what make_fixtures.ts renders", () => {
  for (const [name, text] of Object.entries(fixtureFiles())) assert.equal(read(name), text, name);
});
