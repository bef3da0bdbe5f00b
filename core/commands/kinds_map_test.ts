import assert from "node:assert/strict";
import { KINDS } from "./kinds.ts";
import { bcd } from "../../proto/gen/bcd.js";
import {
  EXTRA_KIND_MESSAGES,
  isWireKind,
  KIND_MESSAGES,
  packPayload,
  packResult,
  unpackPayload,
  unpackResult,
} from "../../proto/kinds_map.ts";
import { messageName, WireDecodeError } from "../../proto/wire.ts";

/** `inventory.refresh` -> `InventoryRefresh`, `site.httpProxy` -> `SiteHttpProxy`. */
function pascal(kind: string): string {
  return kind.split(".").map((p) => p[0]!.toUpperCase() + p.slice(1)).join("");
}

Deno.test("the kind map covers exactly the kinds of the kinds table", () => {
  assert.deepEqual(Object.keys(KIND_MESSAGES).sort(), KINDS.map((k) => k.kind).sort());
});

Deno.test("every kind's messages are named for the kind", async (t) => {
  const all = { ...KIND_MESSAGES, ...EXTRA_KIND_MESSAGES };
  for (const [kind, { payload, result }] of Object.entries(all)) {
    await t.step(kind, () => {
      assert.equal(messageName(payload), `bcd.v1.${pascal(kind)}Payload`);
      assert.equal(messageName(result), `bcd.v1.${pascal(kind)}Result`);
    });
  }
});

Deno.test("isWireKind() accepts table kinds only", () => {
  for (const k of KINDS) assert.ok(isWireKind(k.kind), k.kind);
  for (const k of ["gpu.Reset", "toString", "__proto__", ""]) assert.equal(isWireKind(k), false, k);
});

Deno.test("payloads and results pack as Any and unpack as their kind", () => {
  const any = packPayload("gpu.reset", { gpu_uuids: ["GPU-1", "GPU-2"] });
  assert.equal(any.type_url, "type.googleapis.com/bcd.v1.GpuResetPayload");
  assert.deepEqual(unpackPayload("gpu.reset", any).gpu_uuids, ["GPU-1", "GPU-2"]);
  const res = packResult("node.reboot", { previous_boot_id: "b0", rebooted: true });
  const back = unpackResult("node.reboot", res);
  assert.equal(back.previous_boot_id, "b0");
  assert.equal(back.rebooted, true);
});

Deno.test("a payload of another kind is a type-mismatch, never a misread", () => {
  const any = packPayload("disk.wipe", { devices: ["/dev/disk/by-id/nvme-x"] });
  assert.throws(() => unpackPayload("gpu.reset", any), WireDecodeError);
  assert.throws(() => unpackPayload("gpu.reset", any), {
    reason: "type-mismatch",
    messageName: "bcd.v1.GpuResetPayload",
  });
  assert.throws(() => unpackPayload("gpu.reset", null), { reason: "type-mismatch" });
});

Deno.test("a payload whose bytes do not decode is a typed error", () => {
  const any = { type_url: "type.googleapis.com/bcd.v1.GpuResetPayload", value: new Uint8Array([0x0a, 0x09, 0x41]) };
  assert.throws(() => unpackPayload("gpu.reset", any), { name: "WireDecodeError", reason: "truncated" });
});

Deno.test("a CommandBody carries its payload through encode and decode", () => {
  const body = bcd.v1.CommandBody.encode({
    id: "01HZZZZZZZZZZZZZZZZZZZZZZZ",
    node_id: "node-1",
    kind: "logs.collect",
    payload: packPayload("logs.collect", { upload_url: "https://bucket/presigned", max_bytes: 1 << 20 }),
    lane: "bulk",
    not_after: { seconds: 1_900_000_000, nanos: 0 },
  }).finish();
  const decoded = bcd.v1.CommandBody.decode(body);
  assert.equal(unpackPayload("logs.collect", decoded.payload).upload_url, "https://bucket/presigned");
});
