import assert from "node:assert/strict";

import { isValidCdiDeviceName, isValidCdiKind } from "./cdi_name.ts";
import { validateSchema } from "../../fixtures/cdi/json_schema.ts";
import { assertValidCdiSpec, CDI_SCHEMA_DIR, loadCdiSchema } from "../../fixtures/cdi/schema_check.ts";
import { CdiSpecError, parseCdiSpec, renderCdiSpec } from "./spec.ts";
import { HOLD_RECORDS as RECORDS } from "./records_testing.ts";

const docs = loadCdiSchema();

const G = "GPU-6f2b3c1a-91d4-5e0b-8a7c-2d9e4f1b0c31";

Deno.test("the JSON-schema checker accepts the CDI vectors' own examples and refuses broken ones", () => {
  for (const f of ["minimal.json", "spec-example.json"]) {
    assert.deepEqual(validateSchema(JSON.parse(Deno.readTextFileSync(`${CDI_SCHEMA_DIR}${f}`)), docs), [], f);
  }
  const bad = [
    { kind: "a/b", devices: [] },
    { cdiVersion: "0.6.0", kind: "a/b", devices: [{ name: "x" }] },
    { cdiVersion: 6, kind: "a/b", devices: [] },
    { cdiVersion: "0.6.0", kind: "a/b", devices: [{ name: "x", containerEdits: { deviceNodes: [{ uid: -1 }] } }] },
    { cdiVersion: "0.6.0", kind: "a/b", devices: [], annotations: { k: 1 } },
  ];
  for (const b of bad) assert.notDeepEqual(validateSchema(b, docs), [], JSON.stringify(b));
});

Deno.test("every spec bcd writes validates against the CDI schema and the name grammar", async (t) => {
  for (const [name, r] of Object.entries(RECORDS)) await t.step(name, () => assertValidCdiSpec(renderCdiSpec(r)));
});

Deno.test("a spec carries cdiVersion 0.6, device-id annotations, the binding and cgroup-parent annotations", () => {
  const mig = renderCdiSpec(RECORDS["a MIG hold with a slice"]!);
  assert.equal(mig.cdiVersion, "0.6.0");
  assert.equal(mig.kind, "bcd.dev/gpu");
  assert.deepEqual(mig.annotations, { "bcd.dev/cgroup-parent": "bcd-alloc-m\\x2d2.slice" });
  assert.deepEqual(mig.devices[0], {
    name: `${G}_gi1_ci0`,
    annotations: { "bcd.dev/device-id": `${G}/gi1/ci0` },
    containerEdits: { deviceNodes: [{ path: "/dev/nvidia2" }] },
  });
  const k = renderCdiSpec(RECORDS["a Kubernetes slot hold without a known minor"]!);
  assert.deepEqual(k.annotations, { "bcd.dev/binding": "kubernetes" });
  assert.equal(renderCdiSpec(RECORDS["a whole-GPU hold"]!).annotations, undefined);
});

Deno.test("a spec reads back as the hold it was written for", () => {
  for (const r of Object.values(RECORDS)) {
    const o = parseCdiSpec(r.allocationId, JSON.stringify(renderCdiSpec(r)));
    assert.equal(o.binding, r.binding);
    assert.deepEqual(
      o.devices.map((d) => [d.class, d.atom, d.gpuUuid]),
      r.devices.map((d) => [d.class, d.atom, d.gpuUuid]),
    );
    assert.deepEqual(o.env, r.env);
    assert.equal(o.cgroupParent, r.cgroupParent);
  }
});

Deno.test("specs that are not readable holds are refused with what is wrong", () => {
  const good = renderCdiSpec(RECORDS["a whole-GPU hold"]!);
  const rows: [string, unknown][] = [
    ["not JSON", "{"],
    ["another vendor's kind", { ...good, kind: "nvidia.com/gpu" }],
    ["no devices", { ...good, devices: [] }],
    ["a device without bcd.dev/device-id", { ...good, devices: [{ name: G, containerEdits: {} }] }],
    ["a name that is not its atom's", { ...good, devices: [{ ...good.devices[0], name: "other" }] }],
    ["an atom of no class", {
      ...good,
      devices: [{ name: "x", annotations: { "bcd.dev/device-id": "x" }, containerEdits: {} }],
    }],
    ["another allocation's env", { ...good, containerEdits: { env: ["BCD_ALLOCATION_ID=zz"] } }],
    ["a binding other than kubernetes", { ...good, annotations: { "bcd.dev/binding": "slurm" } }],
  ];
  for (const [name, spec] of rows) {
    assert.throws(() => parseCdiSpec("a1", typeof spec === "string" ? spec : JSON.stringify(spec)), CdiSpecError, name);
  }
});

Deno.test("the CDI name grammar", () => {
  for (const k of ["bcd.dev/gpu", "nvidia.com/gpu", "a/b"]) assert.ok(isValidCdiKind(k), k);
  for (const k of ["bcd.dev", "1bcd.dev/gpu", "bcd.dev/gpu-", "a/b/c", "bcd.dev/g pu"]) {
    assert.ok(!isValidCdiKind(k), k);
  }
  for (const n of [G, `${G}_gi1_ci0`, "0", "a:b"]) assert.ok(isValidCdiDeviceName(n), n);
  for (const n of [`${G}/s0`, "_a", "a_", "", "a b"]) assert.ok(!isValidCdiDeviceName(n), n);
});

const SHARED_CDI = new URL("../../../shared/vectors/cdi/", import.meta.url).pathname;
const sharedCdiPresent = (() => {
  try {
    return Deno.statSync(SHARED_CDI).isDirectory;
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    console.log(`spec_test: ${SHARED_CDI} is absent, so the schema copies in fixtures/cdi/ cannot be compared`);
    return false;
  }
})();

Deno.test({
  name: "the schema copies in fixtures/cdi/ are the shared vectors",
  ignore: !sharedCdiPresent,
  fn() {
    for (const f of ["schema.json", "defs.json", "minimal.json", "spec-example.json"]) {
      assert.equal(Deno.readTextFileSync(`${CDI_SCHEMA_DIR}${f}`), Deno.readTextFileSync(`${SHARED_CDI}${f}`), f);
    }
  },
});
