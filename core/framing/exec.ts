/**
 * The messages of an execution, kinds 12 to 21 (seed 002 §Executions): {@link HostMessage} from the host and
 * {@link GuestMessage} from the guest. Every body starts with the execution's key.
 *
 * @module
 */
import { BodyError } from "./errors.ts";
import { BodyReader, BodyWriter } from "./_bytes.ts";
import { encodeStartBody, type ExecKey, type ExecStart, readStart } from "./exec_start.ts";
import {
  causeCode,
  causeOf,
  HOST_CAUSES,
  type Outcome,
  OUTCOME_BYTES,
  readOutcome,
  writeOutcome,
} from "./exec_outcome.ts";
import type { Cause } from "./exec_outcome.ts";
import { HEADER_BYTES, Kind } from "./frame_kinds.ts";
import { checkOutgoing, writeHeader } from "./encoder.ts";

/** A pool: 0 the input, 1 standard output, 2 standard error, 3 the output pool both streams share. */
export type Pool = 0 | 1 | 2 | 3;
/** A stream: 1 standard output, 2 standard error. */
export type Stream = 1 | 2;

/** A message of the host about an execution. */
export type HostMessage =
  | { readonly type: "start"; readonly key: ExecKey; readonly start: ExecStart }
  | { readonly type: "input"; readonly key: ExecKey; readonly bytes: Uint8Array }
  | { readonly type: "input-end"; readonly key: ExecKey }
  | { readonly type: "cancel"; readonly key: ExecKey; readonly cause: Cause }
  | { readonly type: "credit"; readonly key: ExecKey; readonly pool: Pool; readonly units: number };

/** A message of the guest about an execution. */
export type GuestMessage =
  | { readonly type: "credit"; readonly key: ExecKey; readonly pool: Pool; readonly units: number }
  | { readonly type: "started"; readonly key: ExecKey }
  | { readonly type: "output"; readonly key: ExecKey; readonly stream: Stream; readonly bytes: Uint8Array }
  | { readonly type: "end"; readonly key: ExecKey; readonly stream: Stream }
  | { readonly type: "input-closed"; readonly key: ExecKey }
  | { readonly type: "terminal"; readonly key: ExecKey; readonly outcome: Outcome };

/** Whether `kind` is one of the execution kinds. */
export function isExecKind(kind: number): boolean {
  return kind >= Kind.ExecStart && kind <= Kind.ExecTerminal;
}

function readKey(r: BodyReader): ExecKey {
  return { id: r.u64("id"), generation: r.u64("generation") };
}

function readPool(r: BodyReader, body: string): Pool {
  const p = r.u8("pool");
  if (p > 3) throw new BodyError(body, `pool ${p} is not 0 to 3`);
  return p as Pool;
}

function readStream(r: BodyReader, body: string): Stream {
  const s = r.u8("stream");
  if (s !== 1 && s !== 2) throw new BodyError(body, `stream ${s} is neither 1 nor 2`);
  return s;
}

/** Only the key of a body, to route a message that may not decode further. */
export function peekKey(body: Uint8Array): ExecKey | null {
  if (body.length < 16) return null;
  const v = new DataView(body.buffer, body.byteOffset, 16);
  return { id: v.getBigUint64(0, true), generation: v.getBigUint64(8, true) };
}

/** Decodes a host message of kind 12–16; bodies that are views stay views. */
export function decodeHostMessage(kind: number, body: Uint8Array): HostMessage {
  const name = `exec-${kind}`;
  const r = new BodyReader(body, name);
  const key = readKey(r);
  let m: HostMessage;
  switch (kind) {
    case Kind.ExecStart:
      m = { type: "start", key, start: readStart(r) };
      break;
    case Kind.ExecInput:
      m = { type: "input", key, bytes: r.rest() };
      break;
    case Kind.ExecInputEnd:
      m = { type: "input-end", key };
      break;
    case Kind.ExecCancel: {
      const cause = causeOf(r.u8("cause"), name);
      if (!HOST_CAUSES.includes(cause)) throw new BodyError(name, `the host's cancellation names ${cause}`);
      m = { type: "cancel", key, cause };
      break;
    }
    case Kind.ExecCredit:
      m = { type: "credit", key, pool: readPool(r, name), units: r.u32("units") };
      break;
    default:
      throw new BodyError(name, `kind ${kind} is not a host message of an execution`);
  }
  r.end();
  return m;
}

/** Decodes a guest message of kind 16–21. */
export function decodeGuestMessage(kind: number, body: Uint8Array): GuestMessage {
  const name = `exec-${kind}`;
  const r = new BodyReader(body, name);
  const key = readKey(r);
  let m: GuestMessage;
  switch (kind) {
    case Kind.ExecCredit:
      m = { type: "credit", key, pool: readPool(r, name), units: r.u32("units") };
      break;
    case Kind.ExecStarted:
      m = { type: "started", key };
      break;
    case Kind.ExecOutput:
      m = { type: "output", key, stream: readStream(r, name), bytes: r.rest() };
      break;
    case Kind.ExecEnd:
      m = { type: "end", key, stream: readStream(r, name) };
      break;
    case Kind.ExecInputClosed:
      m = { type: "input-closed", key };
      break;
    case Kind.ExecTerminal:
      m = { type: "terminal", key, outcome: readOutcome(r) };
      break;
    default:
      throw new BodyError(name, `kind ${kind} is not a guest message of an execution`);
  }
  r.end();
  return m;
}

function keyed(size: number, key: ExecKey): BodyWriter {
  return new BodyWriter(16 + size).u64(key.id).u64(key.generation);
}

/** The kind and body of a host message. */
export function encodeHostMessage(m: HostMessage): { kind: number; body: Uint8Array } {
  switch (m.type) {
    case "start":
      return { kind: Kind.ExecStart, body: encodeStartBody(m.key, m.start) };
    case "input":
      return { kind: Kind.ExecInput, body: keyed(m.bytes.length, m.key).bytesOf(m.bytes).done() };
    case "input-end":
      return { kind: Kind.ExecInputEnd, body: keyed(0, m.key).done() };
    case "cancel":
      return { kind: Kind.ExecCancel, body: keyed(1, m.key).u8(causeCode(m.cause)).done() };
    case "credit":
      return { kind: Kind.ExecCredit, body: keyed(5, m.key).u8(m.pool).u32(m.units).done() };
  }
}

/** The kind and body of a guest message. */
export function encodeGuestMessage(m: GuestMessage): { kind: number; body: Uint8Array } {
  switch (m.type) {
    case "credit":
      return { kind: Kind.ExecCredit, body: keyed(5, m.key).u8(m.pool).u32(m.units).done() };
    case "started":
      return { kind: Kind.ExecStarted, body: keyed(0, m.key).done() };
    case "output":
      return { kind: Kind.ExecOutput, body: keyed(1 + m.bytes.length, m.key).u8(m.stream).bytesOf(m.bytes).done() };
    case "end":
      return { kind: Kind.ExecEnd, body: keyed(1, m.key).u8(m.stream).done() };
    case "input-closed":
      return { kind: Kind.ExecInputClosed, body: keyed(0, m.key).done() };
    case "terminal": {
      const w = keyed(OUTCOME_BYTES, m.key);
      writeOutcome(w, m.outcome);
      return { kind: Kind.ExecTerminal, body: w.done() };
    }
  }
}

/**
 * A whole ExecOutput message, header included, with the program's bytes copied once: the worker's hot path.
 * `bytes` may be a view of the runner's buffer.
 */
export function encodeOutputFrame(key: ExecKey, stream: Stream, bytes: Uint8Array): Uint8Array {
  const len = 17 + bytes.length;
  checkOutgoing(Kind.ExecOutput, len);
  const out = new Uint8Array(HEADER_BYTES + len);
  writeHeader(out, 0, Kind.ExecOutput, len);
  const v = new DataView(out.buffer);
  v.setBigUint64(5, key.id, true);
  v.setBigUint64(13, key.generation, true);
  out[21] = stream;
  out.set(bytes, 22);
  return out;
}
