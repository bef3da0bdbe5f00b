import assert from "node:assert/strict";
import { bcd } from "../../../proto/mod.ts";
import { devicesSectionFromWire } from "./wire.ts";

Deno.test("devicesSectionFromWire maps a decoded DevicesSection: binding names, limits, absent fields", () => {
  const bytes = bcd.v1.DevicesSection.encode({
    assignments: [
      {
        allocation_id: "a",
        reservation_id: "r",
        binding: 2,
        devices: [{ class: "gpu.mig", id: "GPU-1/gi1/ci0" }],
        env: ["A=b"],
        limits: { memory_bytes: 2 ** 40, cpu_millis: 4000, hugepages_1gi: 2, cpus: "0-3" },
      },
      { allocation_id: "b", binding: 1, devices: [{ class: "gpu", id: "GPU-2" }] },
      { allocation_id: "c", devices: [{ class: "gpu", id: "GPU-3" }], limits: {} },
    ],
  }).finish();
  const s = devicesSectionFromWire(bcd.v1.DevicesSection.decode(bytes));
  assert.deepEqual(s.assignments, [
    {
      allocation_id: "a",
      reservation_id: "r",
      binding: "BINDING_KUBERNETES",
      devices: [{ class: "gpu.mig", id: "GPU-1/gi1/ci0" }],
      env: ["A=b"],
      limits: { cpu_millis: 4000, memory_bytes: 2 ** 40, hugepages_1gi: 2, cpus: "0-3" },
    },
    {
      allocation_id: "b",
      reservation_id: "",
      binding: "BINDING_HOLD",
      devices: [{ class: "gpu", id: "GPU-2" }],
      env: [],
    },
    {
      allocation_id: "c",
      reservation_id: "",
      binding: "BINDING_UNSPECIFIED",
      devices: [{ class: "gpu", id: "GPU-3" }],
      env: [],
    },
  ]);
});

Deno.test("devicesSectionFromWire keeps an unknown binding number, refuses a uint64 past 2^53, and reads JSON form", () => {
  assert.equal(
    devicesSectionFromWire({ assignments: [{ allocation_id: "x", binding: 9 }] }).assignments[0]!.binding,
    "BINDING_9",
  );
  assert.throws(
    () => devicesSectionFromWire({ assignments: [{ allocation_id: "x", limits: { memory_bytes: 2n ** 60n } }] }),
    RangeError,
  );
  const j = devicesSectionFromWire({
    assignments: [{ allocation_id: "x", binding: "BINDING_HOLD", limits: { memory_bytes: "1024" } }],
  });
  assert.deepEqual(j.assignments[0]!.limits, { memory_bytes: 1024 });
  assert.deepEqual(devicesSectionFromWire(undefined), { assignments: [] });
});

Deno.test("devicesSectionFromWire maps an already-mapped DevicesSection to itself", () => {
  const s = {
    assignments: [{
      allocation_id: "a",
      reservation_id: "r",
      binding: "BINDING_HOLD",
      devices: [{ class: "gpu", id: "GPU-1" }],
      env: ["A=b"],
      limits: { cpu_millis: 1000, mems: "0" },
    }],
  };
  assert.deepEqual(devicesSectionFromWire(s), s);
});
