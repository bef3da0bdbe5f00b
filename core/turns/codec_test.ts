import assert from "node:assert/strict";
import { decodeLine, encodeMessage } from "./codec.ts";
import { TurnsProtocolError, type TurnsRefusalReason } from "./errors.ts";
import { type Direction, MESSAGE_SCHEMAS, type TurnsMessage, type TurnsMessageType } from "./messages.ts";

const VM = "7e57a1b2-0000-4000-8000-0123456789ab";
const TS = 1700000000000000123n; // past 2^53: must survive exactly
const H64 = "0123456789abcdef".repeat(4);

/** One row per message of the seed's two tables (Ping/Pong once per direction), with its exact wire line. */
const ROWS: { msg: TurnsMessage; dir: Direction; wire: string }[] = [
  {
    msg: { type: "Hello", vm_id: VM, guestd_version: "0.1.0" },
    dir: "guest-to-host",
    wire: `{"type":"Hello","vm_id":"${VM}","guestd_version":"0.1.0"}`,
  },
  {
    msg: { type: "TurnStarted", turn_id: 7, ts: TS },
    dir: "guest-to-host",
    wire: `{"type":"TurnStarted","turn_id":7,"ts":1700000000000000123}`,
  },
  {
    msg: { type: "TurnEnded", turn_id: 7, ts: TS },
    dir: "guest-to-host",
    wire: `{"type":"TurnEnded","turn_id":7,"ts":1700000000000000123}`,
  },
  { msg: { type: "DrainAck", in_flight: 0 }, dir: "guest-to-host", wire: `{"type":"DrainAck","in_flight":0}` },
  { msg: { type: "DrainAck", in_flight: null }, dir: "guest-to-host", wire: `{"type":"DrainAck","in_flight":null}` },
  {
    msg: { type: "Resumed", ts: TS },
    dir: "guest-to-host",
    wire: `{"type":"Resumed","ts":1700000000000000123}`,
  },
  {
    msg: { type: "AuthChallenge", nonce: H64, epoch: 2 },
    dir: "guest-to-host",
    wire: `{"type":"AuthChallenge","nonce":"${H64}","epoch":2}`,
  },
  { msg: { type: "AuthOk", mac: H64 }, dir: "guest-to-host", wire: `{"type":"AuthOk","mac":"${H64}"}` },
  {
    msg: { type: "AuthProof", nonce: H64, epoch: 3, time_ns: TS, mac: H64 },
    dir: "host-to-guest",
    wire: `{"type":"AuthProof","nonce":"${H64}","epoch":3,"time_ns":1700000000000000123,"mac":"${H64}"}`,
  },
  { msg: { type: "Ping" }, dir: "guest-to-host", wire: `{"type":"Ping"}` },
  { msg: { type: "Pong" }, dir: "guest-to-host", wire: `{"type":"Pong"}` },
  {
    msg: { type: "Secrets", env: { API_KEY: "sk-1", EMPTY: "" } },
    dir: "host-to-guest",
    wire: `{"type":"Secrets","env":{"API_KEY":"sk-1","EMPTY":""}}`,
  },
  {
    msg: { type: "DrainRequest", deadline_ms: 30000 },
    dir: "host-to-guest",
    wire: `{"type":"DrainRequest","deadline_ms":30000}`,
  },
  { msg: { type: "DrainCancel" }, dir: "host-to-guest", wire: `{"type":"DrainCancel"}` },
  { msg: { type: "RunTurn", turn_id: 0 }, dir: "host-to-guest", wire: `{"type":"RunTurn","turn_id":0}` },
  { msg: { type: "Ping" }, dir: "host-to-guest", wire: `{"type":"Ping"}` },
  { msg: { type: "Pong" }, dir: "host-to-guest", wire: `{"type":"Pong"}` },
];

Deno.test("every message encodes to its exact line and decodes back in its direction", async (t) => {
  for (const row of ROWS) {
    await t.step(`${row.msg.type} ${row.dir}`, () => {
      assert.equal(encodeMessage(row.msg, row.dir), row.wire + "\n");
      assert.deepEqual(decodeLine(row.wire, row.dir), row.msg);
    });
  }
});

Deno.test("the row table covers every message of the schema in every direction it travels", () => {
  for (const [type, schema] of Object.entries(MESSAGE_SCHEMAS)) {
    for (const dir of schema.directions) {
      assert.ok(ROWS.some((r) => r.msg.type === type && r.dir === dir), `${type} ${dir}`);
    }
  }
});

Deno.test("every one-way message is refused as wrong-direction by name", async (t) => {
  for (const row of ROWS) {
    const schema = MESSAGE_SCHEMAS[row.msg.type as TurnsMessageType];
    if (schema.directions.length === 2) continue;
    const other: Direction = row.dir === "guest-to-host" ? "host-to-guest" : "guest-to-host";
    await t.step(`${row.msg.type} ${other}`, () => {
      const e = _refusal(() => decodeLine(row.wire, other), "wrong-direction");
      assert.equal(e.messageType, row.msg.type);
      assert.match(e.message, new RegExp(row.msg.type));
      _refusal(() => encodeMessage(row.msg, other), "wrong-direction");
    });
  }
});

function _refusal(fn: () => unknown, reason: TurnsRefusalReason): TurnsProtocolError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof TurnsProtocolError, `expected TurnsProtocolError, got ${e}`);
    assert.equal(e.reason, reason, e.message);
    return e;
  }
  assert.fail(`expected refusal ${reason}`);
}

/** Each decoding refusal, with a line that earns it. */
const REFUSED: { why: string; line: string; dir: Direction; reason: TurnsRefusalReason }[] = [
  { why: "not JSON", line: `{"type":"Ping"`, dir: "host-to-guest", reason: "bad-json" },
  { why: "an array", line: `[{"type":"Ping"}]`, dir: "host-to-guest", reason: "not-an-object" },
  { why: "null", line: `null`, dir: "host-to-guest", reason: "not-an-object" },
  { why: "a number", line: `7`, dir: "host-to-guest", reason: "not-an-object" },
  { why: "no type", line: `{"turn_id":1}`, dir: "host-to-guest", reason: "missing-type" },
  { why: "type not a string", line: `{"type":7}`, dir: "host-to-guest", reason: "missing-type" },
  { why: "unknown type", line: `{"type":"Reboot"}`, dir: "host-to-guest", reason: "unknown-type" },
  { why: "type of Object.prototype", line: `{"type":"toString"}`, dir: "host-to-guest", reason: "unknown-type" },
  {
    why: "__proto__ at top",
    line: `{"type":"Ping","__proto__":{"x":1}}`,
    dir: "host-to-guest",
    reason: "forbidden-key",
  },
  {
    why: "__proto__ inside env",
    line: `{"type":"Secrets","env":{"__proto__":{"polluted":"1"}}}`,
    dir: "host-to-guest",
    reason: "forbidden-key",
  },
  {
    why: "constructor inside env",
    line: `{"type":"Secrets","env":{"constructor":"x"}}`,
    dir: "host-to-guest",
    reason: "forbidden-key",
  },
  { why: "prototype key", line: `{"type":"Ping","prototype":1}`, dir: "guest-to-host", reason: "forbidden-key" },
  { why: "in_flight omitted", line: `{"type":"DrainAck"}`, dir: "guest-to-host", reason: "missing-field" },
  { why: "deadline omitted", line: `{"type":"DrainRequest"}`, dir: "host-to-guest", reason: "missing-field" },
  { why: "extra field", line: `{"type":"Ping","x":1}`, dir: "host-to-guest", reason: "unknown-field" },
  { why: "turn id negative", line: `{"type":"RunTurn","turn_id":-1}`, dir: "host-to-guest", reason: "bad-field" },
  { why: "turn id fractional", line: `{"type":"RunTurn","turn_id":1.5}`, dir: "host-to-guest", reason: "bad-field" },
  { why: "turn id as string", line: `{"type":"RunTurn","turn_id":"1"}`, dir: "host-to-guest", reason: "bad-field" },
  {
    why: "turn id past 2^53",
    line: `{"type":"RunTurn","turn_id":9007199254740992}`,
    dir: "host-to-guest",
    reason: "bad-field",
  },
  {
    why: "deadline fractional ms",
    line: `{"type":"DrainRequest","deadline_ms":1.5}`,
    dir: "host-to-guest",
    reason: "bad-field",
  },
  {
    why: "deadline in exponent form",
    line: `{"type":"DrainRequest","deadline_ms":1e3}`,
    dir: "host-to-guest",
    reason: "bad-field",
  },
  {
    why: "in_flight as turn 0.0",
    line: `{"type":"DrainAck","in_flight":0.0}`,
    dir: "guest-to-host",
    reason: "bad-field",
  },
  { why: "ts negative", line: `{"type":"Resumed","ts":-1}`, dir: "guest-to-host", reason: "bad-field" },
  {
    why: "mac in capitals",
    line: `{"type":"AuthOk","mac":"${H64.toUpperCase()}"}`,
    dir: "guest-to-host",
    reason: "bad-field",
  },
  {
    why: "mac too short",
    line: `{"type":"AuthOk","mac":"${H64.slice(1)}"}`,
    dir: "guest-to-host",
    reason: "bad-field",
  },
  {
    why: "epoch negative",
    line: `{"type":"AuthChallenge","nonce":"${H64}","epoch":-1}`,
    dir: "guest-to-host",
    reason: "bad-field",
  },
  {
    why: "ts past 2^64-1",
    line: `{"type":"Resumed","ts":18446744073709551616}`,
    dir: "guest-to-host",
    reason: "bad-field",
  },
  {
    why: "vm_id not a UUID",
    line: `{"type":"Hello","vm_id":"vm-1","guestd_version":"0.1.0"}`,
    dir: "guest-to-host",
    reason: "bad-field",
  },
  {
    why: "empty guestd_version",
    line: `{"type":"Hello","vm_id":"${VM}","guestd_version":""}`,
    dir: "guest-to-host",
    reason: "bad-field",
  },
  { why: "env an array", line: `{"type":"Secrets","env":["A"]}`, dir: "host-to-guest", reason: "bad-field" },
  { why: "env value a number", line: `{"type":"Secrets","env":{"A":1}}`, dir: "host-to-guest", reason: "bad-field" },
  { why: "env name with =", line: `{"type":"Secrets","env":{"A=B":"x"}}`, dir: "host-to-guest", reason: "bad-field" },
  {
    why: "env value with NUL",
    line: `{"type":"Secrets","env":{"A":"x\\u0000"}}`,
    dir: "host-to-guest",
    reason: "bad-field",
  },
  { why: "env empty name", line: `{"type":"Secrets","env":{"":"x"}}`, dir: "host-to-guest", reason: "bad-field" },
];

Deno.test("each decoding refusal carries its reason", async (t) => {
  for (const r of REFUSED) {
    await t.step(`${r.why} → ${r.reason}`, () => void _refusal(() => decodeLine(r.line, r.dir), r.reason));
  }
});

Deno.test("a refused __proto__ line leaves Object.prototype untouched", () => {
  _refusal(
    () => decodeLine(`{"type":"Secrets","env":{"__proto__":{"polluted":"yes"}}}`, "host-to-guest"),
    "forbidden-key",
  );
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
});

Deno.test("Secrets with more than 256 entries is refused", () => {
  const env = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`K${i}`, "v"]));
  _refusal(() => decodeLine(JSON.stringify({ type: "Secrets", env }), "host-to-guest"), "bad-field");
  _refusal(() => encodeMessage({ type: "Secrets", env }), "bad-field");
});

Deno.test("field encodings: ms whole, ns exact to 2^64-1, in_flight null always written", () => {
  const max = (1n << 64n) - 1n;
  assert.equal(encodeMessage({ type: "Resumed", ts: max }), `{"type":"Resumed","ts":18446744073709551615}\n`);
  assert.deepEqual(decodeLine(`{"type":"Resumed","ts":18446744073709551615}`, "guest-to-host"), {
    type: "Resumed",
    ts: max,
  });
  assert.match(encodeMessage({ type: "DrainAck", in_flight: null }), /"in_flight":null/);
  _refusal(() => encodeMessage({ type: "DrainRequest", deadline_ms: 1.5 }), "bad-field");
  _refusal(() => encodeMessage({ type: "TurnStarted", turn_id: 1, ts: 5 as unknown as bigint }), "bad-field");
  _refusal(() => encodeMessage({ type: "DrainAck" } as unknown as TurnsMessage), "missing-field");
  _refusal(() => encodeMessage({ type: "Ping", x: 1 } as unknown as TurnsMessage), "unknown-field");
  _refusal(() => encodeMessage({ type: "Nope" } as unknown as TurnsMessage), "unknown-type");
});

Deno.test("field order on the wire does not matter when decoding; whitespace is JSON whitespace", () => {
  assert.deepEqual(decodeLine(` { "ts" : 5 , "turn_id":3,"type":"TurnEnded"}\r`, "guest-to-host"), {
    type: "TurnEnded",
    turn_id: 3,
    ts: 5n,
  });
});
