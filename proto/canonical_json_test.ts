import assert from "node:assert/strict";
import {
  canonicalJson,
  canonicalNodeSpecJson,
  nodeSpecFromJson,
  nodeSpecToJson,
  parseNodeSpecJson,
} from "./canonical_json.ts";
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

Deno.test("strict JSON: each shape error is refused with the path that names it", async (t) => {
  const rows: { name: string; json: unknown; path: string }[] = [
    { name: "an unknown section", json: { gpus: {} }, path: "gpus" },
    {
      name: "an unknown nested field",
      json: { devices: { assignments: [{ alloc: "x" }] } },
      path: "devices.assignments[0].alloc",
    },
    {
      name: "a string for a number",
      json: { instances: { instances: [{ vcpus: "4" }] } },
      path: "instances.instances[0].vcpus",
    },
    {
      name: "a negative uint64",
      json: { devices: { assignments: [{ limits: { memory_bytes: -1 } }] } },
      path: "devices.assignments[0].limits.memory_bytes",
    },
    {
      name: "a uint32 out of range",
      json: { telemetry: { export_interval_ms: 2 ** 32 } },
      path: "telemetry.export_interval_ms",
    },
    {
      name: "a 64-bit integer past 2^53",
      json: { access: { revoked_serials: [2 ** 53] } },
      path: "access.revoked_serials[0]",
    },
    {
      name: "a fraction for an integer",
      json: { instances: { volumes: [{ size_bytes: 1.5 }] } },
      path: "instances.volumes[0].size_bytes",
    },
    {
      name: "an unknown enum name",
      json: { devices: { assignments: [{ binding: "BINDING_FOO" }] } },
      path: "devices.assignments[0].binding",
    },
    {
      name: "an unknown enum number",
      json: { instances: { instances: [{ state: 9 }] } },
      path: "instances.instances[0].state",
    },
    {
      name: "a list that is not an array",
      json: { access: { ssh_ca_keys: "ssh-ed25519 AAAA" } },
      path: "access.ssh_ca_keys",
    },
    { name: "bytes that are not base64", json: { daemon: { signature: "not base64!" } }, path: "daemon.signature" },
    {
      name: "a map value of the wrong type",
      json: { telemetry: { resource_attributes: { a: 1 } } },
      path: 'telemetry.resource_attributes["a"]',
    },
    { name: "a section that is not an object", json: { site: [] }, path: "site" },
  ];
  for (const row of rows) {
    await t.step(row.name, () => {
      assert.throws(() => nodeSpecFromJson(row.json), (e) => {
        assert.ok(e instanceof WireDecodeError, String(e));
        assert.equal(e.reason, "invalid-json");
        assert.ok(e.message.includes(`${row.path}: `), e.message);
        return true;
      });
    });
  }
});

Deno.test("strict JSON accepts the proto3 spellings: 64-bit strings, enum numbers, null for absent", () => {
  const spec = nodeSpecFromJson({
    devices: { assignments: [{ binding: 2, limits: { memory_bytes: "1073741824" }, reservation_id: null }] },
    daemon: { signature: "AAEC" },
  });
  assert.equal(spec.devices?.assignments[0]?.binding, bcd.v1.DeviceAssignment.Binding.BINDING_KUBERNETES);
  assert.equal(spec.devices?.assignments[0]?.limits?.memory_bytes, 1073741824);
  assert.deepEqual(Array.from(spec.daemon?.signature ?? []), [0, 1, 2]);
});

Deno.test("parseNodeSpecJson() bounds the text before parsing it", () => {
  assert.throws(() => parseNodeSpecJson("{}".padEnd(65, " "), { maxBytes: 64 }), { reason: "too-large" });
  assert.throws(() => parseNodeSpecJson("{", { maxBytes: 64 }), { reason: "invalid-json" });
  assert.equal(parseNodeSpecJson('{"access":{}}').access !== null, true);
});
