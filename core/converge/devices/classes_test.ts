import assert from "node:assert/strict";
import { cdiDeviceName, classOfAtom, parseAtom, resolveDevice } from "./classes.ts";
import { AllocationRefused } from "./reasons.ts";
import { sampleInventory, sampleUuid } from "./inventory_testing.ts";

const G0 = sampleUuid(0);
const G1 = sampleUuid(1);
const MISSING = "GPU-deadbeef-0000-0000-0000-000000000000";

// One row per row of the seed's device classes table: atom id, what it resolves to, when it is held.
const ROWS = [
  {
    class: "gpu",
    atom: G0,
    resolvesTo: G0,
    missing: MISSING,
  },
  {
    class: "gpu.mig",
    atom: `${G1}/gi2/ci0`,
    resolvesTo: "MIG-aaaaaaaa-0000-0000-0000-000000000002",
    missing: `${G1}/gi7/ci0`, // the mig-layout unit has not made it
  },
  {
    class: "gpu.slot",
    atom: `${G0}/s3`,
    resolvesTo: G0,
    missing: `${MISSING}/s0`,
  },
] as const;

Deno.test("device classes table: each class resolves its atom and is held only when the inventory has it", async (t) => {
  const inv = sampleInventory();
  for (const row of ROWS) {
    await t.step(`${row.class} resolves ${row.atom}`, () => {
      const r = resolveDevice({ class: row.class, id: row.atom }, inv);
      assert.equal(r.class, row.class);
      assert.equal(r.visibleId, row.resolvesTo);
      assert.equal(r.cdiName, row.atom.replaceAll("/", "_"));
      assert.equal(classOfAtom(row.atom), row.class);
    });
    await t.step(`${row.class} fails device-missing for ${row.missing}`, () => {
      assert.throws(
        () => resolveDevice({ class: row.class, id: row.missing }, inv),
        (e) => e instanceof AllocationRefused && e.reason === "device-missing",
      );
    });
  }
});

Deno.test("an unknown device class fails unsupported-device", () => {
  for (const cls of ["nic", "gpu.vf", "", "GPU"]) {
    assert.throws(
      () => parseAtom({ class: cls, id: G0 }),
      (e) => e instanceof AllocationRefused && e.reason === "unsupported-device",
    );
  }
});

Deno.test("an atom not of its class's shape fails device-missing", () => {
  for (
    const [cls, id] of [
      ["gpu", `${G0}/s1`],
      ["gpu.mig", `${G0}/gi1`],
      ["gpu.mig", `${G0}/gi1/ci0/x`],
      ["gpu.slot", `${G0}/sx`],
      ["gpu", "../../etc/passwd"],
    ]
  ) {
    assert.throws(
      () => parseAtom({ class: cls!, id: id! }),
      (e) => e instanceof AllocationRefused && e.reason === "device-missing",
      `${cls} ${id}`,
    );
  }
});

Deno.test("a MIG instance without a MIG UUID in the inventory fails device-missing", () => {
  const inv = sampleInventory();
  const gpus = inv.gpus.map((g) => g.uuid === G1 ? { ...g, migInstances: [{ gi: 1, ci: 0, index: 0 }] } : g);
  assert.throws(
    () => resolveDevice({ class: "gpu.mig", id: `${G1}/gi1/ci0` }, { gpus }),
    (e) => e instanceof AllocationRefused && e.reason === "device-missing",
  );
});

Deno.test("CDI device names replace every / with _", () => {
  assert.equal(cdiDeviceName(`${G1}/gi1/ci0`), `${G1}_gi1_ci0`);
  assert.equal(cdiDeviceName(G0), G0);
});
