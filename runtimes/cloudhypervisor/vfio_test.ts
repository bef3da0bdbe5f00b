/**
 * VFIO binding of whole IOMMU groups over a fake sysfs whose kernel answers `driver_override`, `unbind` and
 * `drivers_probe` (`fake_sysfs_vfio.ts`): the binder on its own, then through the runtime and root's `ch.vfio` /
 * `ch.unvfio` (as root: `/dev/vfio/<group>` is chowned).
 */
import assert from "node:assert/strict";
import { RuntimeRefused } from "../../core/converge/instances/runtime.ts";
import { makeQcow2, sha256Hex } from "../../fixtures/libvirt/image_server.ts";
import { contractLaunch, contractRecord } from "../instance_runtime_contract_testing.ts";
import { chTestEnv } from "./ch_testing.ts";
import { type FakePciDevice, writeFakeVfioTree } from "./fake_sysfs_vfio.ts";
import { VfioBinder, VfioRefused } from "./vfio.ts";
import { VMM_UID_BASE } from "./unit.ts";

const DEVICES: FakePciDevice[] = [
  { bdf: "0000:17:00.0", class: "0x060400", driver: "pcieport", group: "10" },
  { bdf: "0000:18:00.0", class: "0x030200", driver: "nvidia", group: "10" },
  { bdf: "0000:18:00.1", class: "0x040300", driver: "snd_hda_intel", group: "10" },
  { bdf: "0000:3b:00.0", class: "0x030200", driver: "nvidia", group: "11" },
  { bdf: "0000:3c:00.0", class: "0x020000", driver: "mlx5_core", group: "11" },
];
const HOST_GPUS = ["00000000:18:00.0", "00000000:3B:00.0"];

async function withTree(
  vfioLoaded: boolean,
  f: (b: VfioBinder, t: Awaited<ReturnType<typeof writeFakeVfioTree>>) => Promise<void>,
) {
  const root = await Deno.makeTempDir({ prefix: "bcd-vfio-" });
  try {
    const tree = await writeFakeVfioTree(root, DEVICES, vfioLoaded);
    await f(new VfioBinder({ sys: tree.sys, dev: tree.dev, write: tree.write }), tree);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("VfioBinder: the GPU's whole group goes to vfio-pci (its audio function too; the bridge stays on pcieport), checked, and back to the host drivers", async () => {
  await withTree(true, async (b, tree) => {
    const [g] = await b.groups(["00000000:18:00.0"], HOST_GPUS);
    assert.deepEqual(g, { group: "10", endpoints: ["0000:18:00.0", "0000:18:00.1"], bridges: ["0000:17:00.0"] });
    await b.bind(g!);
    assert.deepEqual(await Promise.all(DEVICES.slice(0, 3).map((d) => b.driver(d.bdf))), [
      "pcieport",
      "vfio-pci",
      "vfio-pci",
    ]);
    assert.deepEqual(tree.writes.slice(0, 3), [
      "/sys/bus/pci/devices/0000:18:00.0/driver_override <- vfio-pci",
      "/sys/bus/pci/devices/0000:18:00.0/driver/unbind <- 0000:18:00.0",
      "/sys/bus/pci/drivers_probe <- 0000:18:00.0",
    ]);
    await b.release(g!);
    assert.deepEqual(await Promise.all(DEVICES.slice(0, 3).map((d) => b.driver(d.bdf))), [
      "pcieport",
      "nvidia",
      "snd_hda_intel",
    ]);
  });
});

Deno.test("VfioBinder: a group holding a device that is not this host's GPU, a function of one or a bridge is refused; a GPU not of this host too", async () => {
  await withTree(true, async (b) => {
    await assert.rejects(
      b.groups(["00000000:3B:00.0"], HOST_GPUS),
      (e) => e instanceof VfioRefused && e.reason === "vfio-group-foreign" && e.message.includes("0000:3c:00.0"),
    );
    await assert.rejects(
      b.groups(["00000000:99:00.0"], HOST_GPUS),
      (e) => e instanceof VfioRefused && e.reason === "vfio-group-foreign",
    );
  });
});

Deno.test("VfioBinder: without vfio-pci loaded the device does not move and the bind fails vfio-bind-failed", async () => {
  await withTree(false, async (b) => {
    const [g] = await b.groups(["00000000:18:00.0"], HOST_GPUS);
    await assert.rejects(
      b.bind(g!),
      (e) => e instanceof VfioRefused && e.reason === "vfio-bind-failed" && /vfio-pci module/.test(e.message),
    );
  });
});

async function _chownWhy(): Promise<string | undefined> {
  if (Deno.uid() !== 0) return "chowning /dev/vfio/<group> to a VMM uid needs root";
  const f = await Deno.makeTempFile({ prefix: "bcd-vfio-probe-" });
  try {
    await Deno.chown(f, VMM_UID_BASE, VMM_UID_BASE);
    return undefined;
  } catch (e) {
    return `this machine cannot chown to uid ${VMM_UID_BASE} (${e instanceof Error ? e.message : e})`;
  } finally {
    await Deno.remove(f);
  }
}
const CHOWN_WHY = await _chownWhy();
const ROOT = CHOWN_WHY === undefined;
if (!ROOT) console.log(`ch.vfio through the runtime ignored: ${CHOWN_WHY}`);

Deno.test({
  name:
    "cloud-hypervisor GPUs: ch.vfio binds the group and hands /dev/vfio/<group> to the VMM's uid; a second VMM is refused vfio-busy, a GPU a hold names gpu-busy; the stop gives the group back to root, the delete the devices to their drivers",
  ignore: !ROOT,
  fn: async (t) => {
    const root = await Deno.makeTempDir({ prefix: "bcd-vfio-rt-" });
    const tree = await writeFakeVfioTree(root, DEVICES, true);
    const binder = new VfioBinder({ sys: tree.sys, dev: tree.dev, write: tree.write });
    const env = await chTestEnv({ vfio: { binder, hostGpus: HOST_GPUS, busyGpus: ["GPU-held"] } });
    if ("skip" in env) {
      await Deno.remove(root, { recursive: true });
      return void await t.step({ name: `skipped: ${env.skip}`, ignore: true, fn: () => {} });
    }
    try {
      const base = await makeQcow2(env.dir, "base.qcow2", "16M");
      env.srv.put("/base.qcow2", base);
      const img = { url: `${env.srv.origin}/base.qcow2`, sha256: await sha256Hex(base), format: "qcow2" as const };
      const gpu = [{ uuid: "GPU-a", pciBusId: "00000000:18:00.0" }];
      const rec = (id: string) => ({ ...contractRecord(id, { ...contractLaunch(img), gpus: gpu }), gpus: ["GPU-a"] });
      await env.rt.define(rec("vm-gpu"));
      await env.rt.start("vm-gpu", false);
      const st = await Deno.stat(`${tree.dev}/vfio/10`);
      assert.deepEqual([st.uid, st.mode! & 0o777], [VMM_UID_BASE, 0o600]);
      const u = env.systemd.units.get("bcd-ch-vm-gpu.service")!;
      assert.ok(
        u.properties.includes("DeviceAllow=/dev/vfio/vfio rw") && u.properties.includes("DeviceAllow=char-vfio rw"),
      );
      assert.deepEqual(u.vmm.infoNow()!.config.devices, [{ path: "/sys/bus/pci/devices/0000:18:00.0/" }]);
      await env.rt.define(rec("vm-gpu2"));
      await assert.rejects(
        env.rt.start("vm-gpu2", false),
        (e) => e instanceof RuntimeRefused && e.reason === "vfio-busy",
      );
      assert.equal((await Deno.stat(`${tree.dev}/vfio/10`)).uid, VMM_UID_BASE, "the running VMM keeps its group");
      await env.rt.stop("vm-gpu");
      assert.equal((await Deno.stat(`${tree.dev}/vfio/10`)).uid, 0, "the stop gives the group back to root");
      const held = {
        ...contractRecord("vm-held", {
          ...contractLaunch(img),
          gpus: [{ uuid: "GPU-held", pciBusId: "00000000:3B:00.0" }],
        }),
        gpus: ["GPU-held"],
      };
      await env.rt.define(held);
      await assert.rejects(
        env.rt.start("vm-held", false),
        (e) => e instanceof RuntimeRefused && e.reason === "gpu-busy",
      );
      assert.equal(await binder.driver("0000:18:00.0"), "vfio-pci", "the device stays on vfio-pci until the delete");
      await env.rt.delete("vm-gpu");
      assert.equal(await binder.driver("0000:18:00.0"), "nvidia");
      assert.equal(await binder.driver("0000:18:00.1"), "snd_hda_intel");
    } finally {
      await env.close();
      await Deno.remove(root, { recursive: true });
    }
  },
});
