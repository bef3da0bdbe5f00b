import assert from "node:assert/strict";
import { bcd, encodeMessage } from "./mod.ts";
import { MessageBudgetError } from "./message_budget.ts";
import { isDefaultWireValue, unknownFields, wireFields } from "./unknown_fields.ts";

Deno.test("unknownFields lists the top-level fields a message does not declare, with their records", () => {
  const known = encodeMessage(bcd.v1.NodeSpec, { telemetry: { otlp_endpoint: "https://o" } });
  const extra = [
    new Uint8Array([0x48, 0x07]), // field 9, varint 7
    new Uint8Array([0x55, 1, 2, 3, 4]), // field 10, fixed32
    new Uint8Array([0x5b, 0x08, 0x01, 0x5c]), // field 11, a group holding a varint
  ];
  const bytes = new Uint8Array([...known, ...extra.flatMap((e) => [...e])]);
  const u = unknownFields(["bcd", "v1", "NodeSpec"], bytes);
  assert.deepEqual(u.map((f) => [f.field, f.wireType]), [[9, 0], [10, 5], [11, 3]]);
  assert.deepEqual(u.map((f) => [...f.record]), extra.map((e) => [...e]));
  assert.equal(wireFields(bytes).length, 4);
});

Deno.test("isDefaultWireValue: zero varints, zero fixed values and empty length-delimited values are empty", () => {
  const rows: [string, number[], boolean][] = [
    ["varint 0", [0x08, 0x00], true],
    ["varint 0, over-long", [0x08, 0x80, 0x00], true],
    ["varint 1", [0x08, 0x01], false],
    ["empty message", [0x0a, 0x00], true],
    ["a message", [0x0a, 0x01, 0x00], false],
    ["fixed64 0", [0x09, 0, 0, 0, 0, 0, 0, 0, 0], true],
    ["fixed32 1", [0x0d, 1, 0, 0, 0], false],
  ];
  for (const [name, bytes, empty] of rows) {
    assert.equal(isDefaultWireValue(wireFields(new Uint8Array(bytes))[0]!), empty, name);
  }
});

Deno.test("wireFields refuses truncated and malformed bytes with MessageBudgetError", () => {
  for (const bad of [[0x0a, 0x05, 0x00], [0x00, 0x01], [0x0c], [0x0b, 0x08], [0x08]]) {
    assert.throws(() => wireFields(new Uint8Array(bad)), MessageBudgetError, JSON.stringify(bad));
  }
});
