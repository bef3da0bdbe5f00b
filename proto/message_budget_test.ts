import assert from "node:assert/strict";
import protobuf from "protobufjs";
import { allMessageTypes, fillVariants, reflectionRoot, staticClassOf } from "./_reflect_fill.ts";
import { bcd } from "./gen/bcd.js";
import { checkMessageBudget, DEFAULT_MAX_MESSAGES, MessageBudgetError } from "./message_budget.ts";
import { decodeMessage, decodeNodeFrame, encodeMessage, encodeNodeFrame, WireDecodeError } from "./wire.ts";

/** What the decoder allocates beyond the root: one per sub-message and per map entry, recursively. */
function objectsIn(type: protobuf.Type, value: Record<string, unknown>): number {
  let n = 0;
  for (const field of type.fieldsArray) {
    const v = value[field.name];
    if (v === undefined || v === null) continue;
    const sub = field.resolvedType instanceof protobuf.Type ? field.resolvedType : undefined;
    const each = (e: unknown) => 1 + (sub ? objectsIn(sub, e as Record<string, unknown>) : 0);
    if (field instanceof protobuf.MapField) n += Object.values(v as object).reduce((a: number, e) => a + each(e), 0);
    else if (field.repeated) n += sub ? (v as unknown[]).reduce((a: number, e) => a + each(e), 0) : 0;
    else if (sub) n += each(v);
  }
  return n;
}

Deno.test("the scan counts exactly the objects the decoder builds, for every message with every field set", () => {
  for (const type of allMessageTypes(reflectionRoot())) {
    const name = type.fullName.slice(1);
    for (const value of fillVariants(type)) {
      const bytes = encodeMessage(staticClassOf(type)!, value as never);
      const count = objectsIn(type, value);
      checkMessageBudget(name, bytes, count);
      if (count > 0) {
        assert.throws(() => checkMessageBudget(name, bytes, count - 1), { reason: "too-many-messages" }, name);
      }
    }
  }
});

Deno.test("four MiB of empty sub-messages is refused before the decoder builds two million objects", () => {
  // NodeFrame.status (field 3) holding StatusReport.conditions (field 5) entries of zero length: 2 bytes each.
  const n = 2_000_000;
  const inner = new Uint8Array(n * 2);
  for (let i = 0; i < n; i++) inner.set([0x2a, 0x00], i * 2);
  const lenBytes: number[] = [];
  for (let len = inner.length;; len >>>= 7) {
    if (len < 0x80) {
      lenBytes.push(len);
      break;
    }
    lenBytes.push((len & 0x7f) | 0x80);
  }
  const frame = new Uint8Array([0x1a, ...lenBytes, ...inner]);
  assert.ok(frame.length <= 4 * 1024 * 1024);
  assert.throws(() => decodeNodeFrame(frame), (e) => e instanceof WireDecodeError && e.reason === "too-many-messages");
  // A real report with many conditions is well inside the default budget.
  const conditions = Array.from({ length: 10_000 }, (_, i) => ({ type: "XidError", subject: `GPU-${i}`, age_ms: i }));
  const ok = decodeNodeFrame(encodeNodeFrame({ status: { conditions } }));
  assert.equal(ok.status?.conditions.length, 10_000);
  assert.ok(DEFAULT_MAX_MESSAGES >= 100_000);
});

Deno.test("the budget is a decode option", () => {
  const bytes = encodeMessage(bcd.v1.TelemetrySection, { resource_attributes: { a: "1", b: "2", c: "3" } });
  assert.equal(
    Object.keys(decodeMessage(bcd.v1.TelemetrySection, bytes, { maxMessages: 3 }).resource_attributes).length,
    3,
  );
  assert.throws(() => decodeMessage(bcd.v1.TelemetrySection, bytes, { maxMessages: 2 }), {
    name: "WireDecodeError",
    reason: "too-many-messages",
  });
});

Deno.test("the scan refuses malformed wire data with the decoder's reasons", async (t) => {
  const rows: { name: string; bytes: number[]; reason: string }[] = [
    { name: "field number 0", bytes: [0x00, 0x01], reason: "malformed" },
    { name: "wire type 6", bytes: [0x0e], reason: "malformed" },
    { name: "an end group without a start", bytes: [0x0c], reason: "malformed" },
    { name: "a mismatched end group", bytes: [0x0b, 0x14], reason: "malformed" },
    { name: "a tag varint cut short", bytes: [0x80], reason: "truncated" },
    { name: "a fixed64 cut short", bytes: [0x09, 0x01, 0x02], reason: "truncated" },
    { name: "a sub-message past its parent", bytes: [0x0a, 0x02, 0x0a, 0x05], reason: "truncated" },
    { name: "an unterminated group", bytes: [0x0b, 0x08, 0x01], reason: "truncated" },
  ];
  for (const row of rows) {
    await t.step(row.name, () => {
      assert.throws(() => checkMessageBudget("bcd.v1.NodeFrame", new Uint8Array(row.bytes)), (e) => {
        assert.ok(e instanceof MessageBudgetError, String(e));
        assert.equal(e.reason, row.reason, e.message);
        return true;
      });
    });
  }
});
