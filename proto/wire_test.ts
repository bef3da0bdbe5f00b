import assert from "node:assert/strict";
import { bcd } from "./gen/bcd.js";
import {
  decodeGatewayFrame,
  decodeMessage,
  decodeNodeFrame,
  DEFAULT_MAX_FRAME_BYTES,
  encodeGatewayFrame,
  encodeMessage,
  encodeNodeFrame,
  WireDecodeError,
  type WireDecodeReason,
} from "./wire.ts";
import type { CommandBody } from "./mod.ts";

function decodeError(fn: () => unknown): WireDecodeError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof WireDecodeError, `expected WireDecodeError, got ${e}`);
    return e;
  }
  assert.fail("decoded without error");
}

const hello = encodeNodeFrame({
  hello: {
    node_id: "node-1",
    role: "node",
    journal_id: "j-1",
    boot_id: "b-1",
    applied_generation: 42,
    capabilities: ["devices.limits", "binding.kubernetes"],
    unacked_results: [{ command_id: "01HZX", state: bcd.v1.CommandUpdate.State.FAILED, error_code: "interrupted" }],
    challenge_sig: new Uint8Array(64).fill(7),
  },
});

Deno.test("session frames decode to their oneof member with the seed's field names", () => {
  const frame = decodeNodeFrame(hello);
  assert.equal(frame.frame, "hello");
  assert.equal(frame.hello?.node_id, "node-1");
  assert.equal(frame.hello?.applied_generation, 42);
  assert.equal(frame.hello?.unacked_results?.[0]?.error_code, "interrupted");
  const down = decodeGatewayFrame(
    encodeGatewayFrame({ ack: { command_ids: ["a", "b"], journal_id: "j", event_seq: 9 } }),
  );
  assert.equal(down.frame, "ack");
  assert.deepEqual(down.ack?.command_ids, ["a", "b"]);
  assert.equal(down.ack?.event_seq, 9);
});

Deno.test("every truncation of a frame is either a shorter valid frame or a typed error", () => {
  let refused = 0;
  for (let n = 0; n < hello.length; n++) {
    try {
      decodeNodeFrame(hello.subarray(0, n));
    } catch (e) {
      assert.ok(e instanceof WireDecodeError, `prefix ${n}: ${e}`);
      assert.ok(["truncated", "malformed"].includes(e.reason), `prefix ${n}: ${e.reason}`);
      assert.equal(e.messageName, "bcd.v1.NodeFrame");
      refused++;
    }
  }
  // The hello is one length-delimited field: every proper prefix but the empty one ends inside it.
  assert.equal(refused, hello.length - 1);
});

Deno.test("garbage never crashes a decoder: only typed errors or a decoded frame", () => {
  let seed = 0x9e3779b9;
  const next = () => (seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0);
  const reasons = new Set<WireDecodeReason>();
  for (let i = 0; i < 3000; i++) {
    const bytes = new Uint8Array(1 + (next() % 96)).map(() => next() & 0xff);
    for (const decode of [decodeNodeFrame, decodeGatewayFrame]) {
      try {
        decode(bytes);
      } catch (e) {
        assert.ok(e instanceof WireDecodeError, `input ${Array.from(bytes)}: ${e}`);
        reasons.add(e.reason);
      }
    }
  }
  assert.ok(reasons.has("malformed") && reasons.has("truncated"), [...reasons].join(","));
});

Deno.test("each decode failure carries the reason that names it", async (t) => {
  const rows: { name: string; bytes: number[]; reason: WireDecodeReason }[] = [
    { name: "a length past the end", bytes: [0x0a, 0x05, 0x61], reason: "truncated" },
    { name: "a varint cut short", bytes: [0x18, 0xff], reason: "truncated" },
    { name: "wire type 7", bytes: [0x0f], reason: "malformed" },
    { name: "a string that is not UTF-8", bytes: [0x0a, 0x02, 0xc3, 0x28], reason: "invalid-utf8" },
    { name: "a lone surrogate in UTF-8", bytes: [0x0a, 0x03, 0xed, 0xa0, 0x80], reason: "invalid-utf8" },
    // uint64 event_seq = 2^53 + 1.
    {
      name: "a 64-bit integer past 2^53",
      bytes: [0x18, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10],
      reason: "unsafe-integer",
    },
    { name: "groups nested past the recursion limit", bytes: Array(2000).fill(0x0b), reason: "too-deep" },
  ];
  for (const row of rows) {
    await t.step(row.name, () => {
      const e = decodeError(() => decodeMessage(bcd.v1.Ack, new Uint8Array(row.bytes)));
      assert.equal(e.reason, row.reason, e.message);
      assert.equal(e.messageName, "bcd.v1.Ack");
      assert.equal(e.size, row.bytes.length);
    });
  }
});

Deno.test("2^53 - 1 is the largest 64-bit value accepted", () => {
  const bytes = encodeMessage(bcd.v1.Ack, { event_seq: Number.MAX_SAFE_INTEGER });
  assert.equal(decodeMessage(bcd.v1.Ack, bytes).event_seq, Number.MAX_SAFE_INTEGER);
});

Deno.test("an input over the bound is refused before any byte is parsed", () => {
  // Valid bytes, one over a small bound: the refusal cannot come from parsing.
  const bytes = encodeGatewayFrame({ cancel: { command_id: "c", reason: "operator" } });
  const e = decodeError(() => decodeGatewayFrame(bytes, { maxBytes: bytes.length - 1 }));
  assert.equal(e.reason, "too-large");
  assert.equal(e.size, bytes.length);
  assert.equal(decodeGatewayFrame(bytes, { maxBytes: bytes.length }).cancel?.reason, "operator");
  // The default bound is 4 MiB; a larger buffer is refused without being read (a read of zeros would say malformed).
  const big = new Uint8Array(DEFAULT_MAX_FRAME_BYTES + 1);
  assert.equal(decodeError(() => decodeNodeFrame(big)).reason, "too-large");
  assert.equal(DEFAULT_MAX_FRAME_BYTES, 4 * 1024 * 1024);
});

Deno.test("a frame of exactly 4 MiB is decoded", () => {
  const overhead = encodeNodeFrame({ secret_request: { request_id: "r", ref: "" } }).length + 8;
  const ref = "x".repeat(DEFAULT_MAX_FRAME_BYTES - overhead);
  let bytes = encodeNodeFrame({ secret_request: { request_id: "r", ref } });
  const pad = DEFAULT_MAX_FRAME_BYTES - bytes.length;
  bytes = encodeNodeFrame({ secret_request: { request_id: "r", ref: ref + "x".repeat(pad) } });
  assert.ok(bytes.length >= DEFAULT_MAX_FRAME_BYTES - 2 && bytes.length <= DEFAULT_MAX_FRAME_BYTES, `${bytes.length}`);
  assert.equal(decodeNodeFrame(bytes).secret_request?.ref?.length, ref.length + pad);
});

Deno.test("encoders return plain Uint8Arrays and decoded bytes are plain Uint8Arrays", () => {
  const bytes = encodeMessage(bcd.v1.AttestedReport, { body: new Uint8Array([1, 2]), node_sig: new Uint8Array([3]) });
  assert.equal(Object.getPrototypeOf(bytes), Uint8Array.prototype);
  const decoded = decodeMessage(bcd.v1.AttestedReport, bytes);
  assert.equal(Object.getPrototypeOf(decoded.body), Uint8Array.prototype);
  assert.deepEqual(Array.from(decoded.body), [1, 2]);
});

Deno.test("a field from a newer schema is skipped and the known fields still decode", () => {
  // Ack with an extra varint field 99 and an extra length-delimited field 100 (a newer gateway's addition).
  const newer = new Uint8Array([
    ...encodeMessage(bcd.v1.Ack, { event_seq: 3 }),
    0x98,
    0x06,
    0x05,
    0xa2,
    0x06,
    0x01,
    0x41,
  ]);
  const decoded = decodeMessage(bcd.v1.Ack, newer);
  assert.equal(decoded.event_seq, 3);
  // Unknown fields are not kept (protobufjs' default): bcd stores the bytes it must keep, never a re-encoding.
  assert.deepEqual(encodeMessage(bcd.v1.Ack, decoded), encodeMessage(bcd.v1.Ack, { event_seq: 3 }));
});

Deno.test("nested decoded messages read their defaults: scalars, lists and maps are never null", () => {
  const bytes = encodeGatewayFrame({
    desired_state: { body: encodeMessage(bcd.v1.DesiredStateBody, { generation: 3, full: { instances: {} } }) },
  });
  const frame = decodeGatewayFrame(bytes);
  assert.equal(frame.frame, "desired_state");
  if (frame.frame !== "desired_state") return;
  // Typed without `?.` at any depth below a present message (compile-time part of this test).
  const body = decodeMessage(bcd.v1.DesiredStateBody, frame.desired_state.body);
  assert.equal(body.spec, "full");
  if (body.spec !== "full") return;
  const instances: bcd.v1.InstanceSpec.$Properties[] = body.full.instances?.instances ?? [{ id: "absent" }];
  assert.deepEqual(instances, []);
  const volumes: string[] = (body.full.instances?.volumes ?? []).map((v) => v.id);
  assert.deepEqual(volumes, []);
  assert.equal(body.full.access, null);
  assert.equal(body.base_generation, 0);
  assert.equal(body.spec_hash, "");
  const telemetry = decodeMessage(bcd.v1.TelemetrySection, new Uint8Array());
  const attrs: { [key: string]: string } = telemetry.resource_attributes;
  assert.deepEqual(attrs, {});
});

Deno.test("the short type names read decoded messages", () => {
  const body: CommandBody = decodeMessage(bcd.v1.CommandBody, encodeMessage(bcd.v1.CommandBody, { id: "c", seq: 4 }));
  const seq: number = body.seq;
  const notAfter: number | undefined = body.not_after?.seconds;
  assert.equal(seq, 4);
  assert.equal(notAfter, undefined);
});
