import assert from "node:assert/strict";
import { canonicalJson, canonicalNodeSpecJson, nodeSpecFromJson, nodeSpecToJson } from "./canonical_json.ts";
import { fillVariants, reflectionRoot } from "./_reflect_fill.ts";
import { bcd } from "./gen/bcd.js";
import { encodeMessage, WireDecodeError } from "./wire.ts";

const nodeSpecType = reflectionRoot().lookupType("bcd.v1.NodeSpec");

Deno.test("canonicalJson() sorts keys at every level and keeps list order", () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }),
    '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
  );
});

Deno.test("a NodeSpec with every field set survives JSON and back, byte for byte", () => {
  for (const value of fillVariants(nodeSpecType)) {
    const spec = bcd.v1.NodeSpec.fromObject(value);
    const bytes = encodeMessage(bcd.v1.NodeSpec, spec);
    const json = JSON.parse(canonicalNodeSpecJson(spec));
    assert.deepEqual(encodeMessage(bcd.v1.NodeSpec, nodeSpecFromJson(json)), bytes);
  }
});

Deno.test("the canonical JSON uses the seed's field names, enum names and omits defaults", () => {
  const json = nodeSpecToJson({
    devices: {
      assignments: [{
        allocation_id: "a1",
        binding: bcd.v1.DeviceAssignment.Binding.BINDING_KUBERNETES,
        devices: [{ class: "gpu", id: "GPU-1" }],
        limits: { cpu_millis: 4000, hugepages_1gi: 2, cpus: "" },
      }],
    },
  });
  assert.deepEqual(json, {
    devices: {
      assignments: [{
        allocation_id: "a1",
        binding: "BINDING_KUBERNETES",
        devices: [{ class: "gpu", id: "GPU-1" }],
        limits: { cpu_millis: 4000, hugepages_1gi: 2 },
      }],
    },
  });
});

Deno.test("a set-but-empty section stays distinct from an unset one", () => {
  assert.equal(canonicalNodeSpecJson({ access: {} }), '{"access":{}}');
  assert.equal(canonicalNodeSpecJson({}), "{}");
});

Deno.test("two specs built in different key orders have one canonical JSON", () => {
  const a = canonicalNodeSpecJson({
    telemetry: { otlp_endpoint: "https://otel:4318", resource_attributes: { z: "1", a: "2" } },
    host: { units: [{ name: "sysctl", settings_json: "{}" }] },
  });
  const b = canonicalNodeSpecJson({
    host: { units: [{ settings_json: "{}", name: "sysctl" }] },
    telemetry: { resource_attributes: { a: "2", z: "1" }, otlp_endpoint: "https://otel:4318" },
  });
  assert.equal(a, b);
  assert.ok(a.indexOf('"host"') < a.indexOf('"telemetry"'));
});

Deno.test("JSON that is not an object is refused with a typed error", () => {
  for (const bad of [null, 3, "spec", [1]]) {
    assert.throws(() => nodeSpecFromJson(bad), (e) => e instanceof WireDecodeError && e.reason === "invalid-json");
  }
  assert.throws(
    () => nodeSpecFromJson({ devices: "not an object" }),
    (e) => e instanceof WireDecodeError && e.reason === "invalid-json",
  );
});
