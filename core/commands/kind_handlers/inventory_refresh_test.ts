import assert from "node:assert/strict";
import { packPayload, unpackResult } from "../../../proto/mod.ts";
import { silentLogger } from "../../log/mod.ts";
import { commandBody } from "../command.ts";
import { inventoryRefreshHandler } from "./inventory_refresh.ts";
import { InvalidPayload } from "../rejection.ts";

const host = {
  read: () =>
    Promise.resolve({
      hostname: "gpu-17",
      boot_id: "boot-1",
      cpu: { model: "AMD EPYC", sockets: 2, cores: 64, threads: 128, flags: ["svm"] },
      memory_bytes: 512 * 2 ** 30,
      numa_nodes: [{ id: 0, cpus: "0-63" }, { id: 1, cpus: "64-127" }],
    }),
};
const gpus = {
  query: () =>
    Promise.resolve({
      driverVersion: "550.54.15",
      gpus: [{
        uuid: "GPU-1",
        pciBusId: "00000000:18:00.0",
        numaNode: 0,
        productName: "NVIDIA H100",
        migMode: "Enabled" as const,
        migInstances: [{ uuid: "MIG-1", gi: 1, ci: 0, index: 0, profile: "1g.10gb" }],
        eccVolatileUncorrectable: 2,
        remap: { pending: true, failed: false },
      }],
    }),
};

function ctx(payload = packPayload("inventory.refresh", { include_health: true })) {
  return {
    command: commandBody({
      id: "c",
      nodeId: "n",
      kind: "inventory.refresh",
      payload: { typeUrl: payload.type_url, value: payload.value },
    }),
    signal: new AbortController().signal,
    bootId: "boot-1",
    logger: silentLogger(),
  };
}

Deno.test("inventory.refresh reports the host inventory with the GPUs, health when asked for", async () => {
  const h = inventoryRefreshHandler({ host, gpus });
  const res = await h.run(ctx());
  const inv = unpackResult("inventory.refresh", { type_url: res.result!.typeUrl, value: res.result!.value }).inventory!;
  assert.equal(inv.hostname, "gpu-17");
  assert.equal(inv.cpu?.threads, 128);
  assert.equal(inv.numa_nodes.length, 2);
  assert.equal(inv.gpu_driver_version, "550.54.15");
  assert.equal(inv.gpus[0]?.uuid, "GPU-1");
  assert.equal(inv.gpus[0]?.mig_enabled, true);
  assert.equal(inv.gpus[0]?.mig_instances[0]?.uuid, "MIG-1");
  assert.equal(inv.gpus[0]?.ecc?.volatile_uncorrectable, 2);
  assert.equal(inv.gpus[0]?.remap?.pending, true);
  const quick = await h.run(ctx(packPayload("inventory.refresh", { include_health: false })));
  const q = unpackResult("inventory.refresh", { type_url: quick.result!.typeUrl, value: quick.result!.value })
    .inventory!;
  assert.equal(q.gpus[0]?.ecc, null);
});

Deno.test("inventory.refresh without a GPU tool reports no GPUs; a payload of another type is invalid", async () => {
  const h = inventoryRefreshHandler({ host });
  const res = await h.run(ctx());
  const inv = unpackResult("inventory.refresh", { type_url: res.result!.typeUrl, value: res.result!.value }).inventory!;
  assert.deepEqual(inv.gpus, []);
  const wrong = packPayload("node.reboot", { reason: "x" });
  assert.throws(() => h.resources!(ctx(wrong).command), InvalidPayload);
});
