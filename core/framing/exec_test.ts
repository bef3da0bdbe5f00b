import assert from "node:assert/strict";
import { BodyError } from "./errors.ts";
import {
  decodeGuestMessage,
  decodeHostMessage,
  encodeGuestMessage,
  encodeHostMessage,
  encodeOutputFrame,
  type GuestMessage,
  type HostMessage,
} from "./exec.ts";
import { encodeStartBody, type ExecStart, MAX_CHUNK } from "./exec_start.ts";
import type { Outcome } from "./exec_outcome.ts";
import { Kind, MAX_EXEC_CONTROL_BODY } from "./frame_kinds.ts";
import { Decoder } from "./decoder.ts";

const key = { id: 0x0102030405060708n, generation: 0xfffffffffffffffen };
const START: ExecStart = {
  chunk: 65536,
  input: { unit: "bytes", size: 131072 },
  output: { unit: "frames", size: 4 },
  sharedPool: true,
  graceMs: 500,
  settlementMs: 200,
  timeoutMs: 10_000,
  stdin: true,
  argv: ["/bin/sh", "-c", "echo ä"],
};
const OUTCOME: Outcome = {
  status: { kind: "signal", signal: 9 },
  cause: "timeout",
  launch: null,
  stdoutLost: true,
  stderrLost: false,
  reusable: true,
};

const HOST: HostMessage[] = [
  { type: "start", key, start: START },
  { type: "start", key, start: { ...START, timeoutMs: null, stdin: false, sharedPool: false } },
  { type: "input", key, bytes: Uint8Array.of(0, 1, 2, 255) },
  { type: "input-end", key },
  { type: "cancel", key, cause: "cancel" },
  { type: "cancel", key, cause: "drop" },
  { type: "cancel", key, cause: "timeout" },
  { type: "credit", key, pool: 3, units: 0xffffffff },
];
const GUEST: GuestMessage[] = [
  { type: "credit", key, pool: 0, units: 7 },
  { type: "started", key },
  { type: "output", key, stream: 2, bytes: Uint8Array.of(9, 8) },
  { type: "end", key, stream: 1 },
  { type: "input-closed", key },
  { type: "terminal", key, outcome: OUTCOME },
  {
    type: "terminal",
    key,
    outcome: { ...OUTCOME, status: { kind: "none" }, cause: null, launch: { stage: 0, errno: 11 } },
  },
  { type: "terminal", key, outcome: { ...OUTCOME, status: { kind: "exit", code: -1 }, cause: "disconnect" } },
];

const plain = (m: unknown) =>
  JSON.parse(JSON.stringify(m, (_k, v) => typeof v === "bigint" ? `${v}n` : v instanceof Uint8Array ? [...v] : v));

Deno.test("every host message of an execution round-trips", async (t) => {
  for (const m of HOST) {
    await t.step(`${m.type}`, () => {
      const { kind, body } = encodeHostMessage(m);
      assert.ok(kind >= Kind.ExecStart && kind <= Kind.ExecCredit);
      if (kind !== Kind.ExecStart && kind !== Kind.ExecInput) assert.ok(body.length <= MAX_EXEC_CONTROL_BODY);
      assert.deepEqual(plain(decodeHostMessage(kind, body)), plain(m));
    });
  }
});

Deno.test("every guest message of an execution round-trips", async (t) => {
  for (const m of GUEST) {
    await t.step(`${m.type}`, () => {
      const { kind, body } = encodeGuestMessage(m);
      if (kind !== Kind.ExecOutput) assert.ok(body.length <= MAX_EXEC_CONTROL_BODY);
      assert.deepEqual(plain(decodeGuestMessage(kind, body)), plain(m));
    });
  }
});

Deno.test("encodeOutputFrame writes the same message as encodeGuestMessage", () => {
  const frame = encodeOutputFrame(key, 1, Uint8Array.of(1, 2, 3));
  const d = new Decoder({ from: "guest" });
  d.push(frame, (f) => {
    assert.equal(f.kind, Kind.ExecOutput);
    assert.deepEqual(
      plain(decodeGuestMessage(f.kind, f.body)),
      plain({ type: "output", key, stream: 1, bytes: [1, 2, 3] }),
    );
  });
  assert.equal(MAX_CHUNK, 256 * 1024 - 17);
  assert.equal(encodeOutputFrame(key, 1, new Uint8Array(MAX_CHUNK)).length, 5 + 256 * 1024);
});

function startBody(over: Partial<ExecStart>): Uint8Array {
  return encodeStartBody(key, { ...START, ...over });
}

function patched(over: (v: DataView, b: Uint8Array) => void): Uint8Array {
  const b = startBody({}).slice();
  over(new DataView(b.buffer), b);
  return b;
}

Deno.test("starts that do not decode", async (t) => {
  // Offsets after the 16-byte key: chunk 16, input unit 20, size 21, output unit 25, size 26, shared 30,
  // grace 31, settlement 39, timeout flag 47, timeout 48, stdin 56, argc 57, args 59.
  const rows: [string, Uint8Array][] = [
    ["a short key", new Uint8Array(10)],
    ["a chunk of 0", patched((v) => v.setUint32(16, 0, true))],
    ["a chunk beyond MAX_CHUNK", patched((v) => v.setUint32(16, MAX_CHUNK + 1, true))],
    ["an input unit of 2", patched((v) => v.setUint8(20, 2))],
    ["an empty input window", patched((v) => v.setUint32(21, 0, true))],
    ["an output unit of 2", patched((v) => v.setUint8(25, 2))],
    ["a shared flag of 2", patched((v) => v.setUint8(30, 2))],
    ["a timeout without its flag", patched((v) => v.setUint8(47, 0))],
    ["a timeout flag of 2", patched((v) => v.setUint8(47, 2))],
    ["a grace beyond 2^53", patched((v) => v.setBigUint64(31, 1n << 60n, true))],
    ["a stdin flag of 2", patched((v) => v.setUint8(56, 2))],
    ["no arguments", patched((v) => v.setUint16(57, 0, true)).subarray(0, 59)],
    ["more arguments than bytes", patched((v) => v.setUint16(57, 60000, true))],
    ["an argument past the end", patched((v) => v.setUint32(59, 1000, true))],
    ["an argument with NUL", startBody({ argv: ["/bin/true"] }).map((x, i, a) => i === a.length - 1 ? 0 : x)],
    ["trailing bytes", Uint8Array.of(...startBody({}), 0)],
    [
      "an argument that is not UTF-8",
      startBody({ argv: ["/bin/true"] }).map((x, i, a) => i === a.length - 1 ? 0xff : x),
    ],
  ];
  for (const [name, body] of rows) {
    await t.step(name, () => assert.throws(() => decodeHostMessage(Kind.ExecStart, body), BodyError));
  }
});

Deno.test("execution messages that do not decode", async (t) => {
  const k = new Uint8Array(16);
  const rows: [string, number, Uint8Array, "host" | "guest"][] = [
    ["input-end with a byte", Kind.ExecInputEnd, Uint8Array.of(...k, 0), "host"],
    ["cancel without a cause", Kind.ExecCancel, k, "host"],
    ["cancel with cause 0", Kind.ExecCancel, Uint8Array.of(...k, 0), "host"],
    ["cancel with cause reset", Kind.ExecCancel, Uint8Array.of(...k, 4), "host"],
    ["cancel with cause disconnect", Kind.ExecCancel, Uint8Array.of(...k, 5), "host"],
    ["cancel with cause 6", Kind.ExecCancel, Uint8Array.of(...k, 6), "host"],
    ["credit of pool 4", Kind.ExecCredit, Uint8Array.of(...k, 4, 1, 0, 0, 0), "host"],
    ["credit without units", Kind.ExecCredit, Uint8Array.of(...k, 1, 1), "host"],
    ["output of stream 0", Kind.ExecOutput, Uint8Array.of(...k, 0, 1), "guest"],
    ["output of stream 3", Kind.ExecOutput, Uint8Array.of(...k, 3), "guest"],
    ["end of stream 0", Kind.ExecEnd, Uint8Array.of(...k, 0), "guest"],
    ["started with a byte", Kind.ExecStarted, Uint8Array.of(...k, 1), "guest"],
    ["terminal cut short", Kind.ExecTerminal, Uint8Array.of(...k, 1, 0, 0), "guest"],
    [
      "terminal status 3",
      Kind.ExecTerminal,
      Uint8Array.of(...k, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
      "guest",
    ],
    [
      "terminal code without status",
      Kind.ExecTerminal,
      Uint8Array.of(...k, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
      "guest",
    ],
    [
      "terminal stage without launch",
      Kind.ExecTerminal,
      Uint8Array.of(...k, 1, 0, 0, 0, 0, 0, 0, 21, 0, 0, 0, 0, 0, 0, 0, 0),
      "guest",
    ],
    [
      "terminal flag 8",
      Kind.ExecTerminal,
      Uint8Array.of(...k, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8),
      "guest",
    ],
    ["a guest kind from the host", Kind.ExecOutput, Uint8Array.of(...k, 1), "host"],
    ["a host kind from the guest", Kind.ExecStart, startBody({}), "guest"],
  ];
  for (const [name, kind, body, from] of rows) {
    await t.step(name, () => {
      const decode = from === "host" ? decodeHostMessage : decodeGuestMessage;
      assert.throws(() => decode(kind, body), BodyError);
    });
  }
});
