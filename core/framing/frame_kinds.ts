/**
 * The message kinds of the host↔guest control framing and each kind's body limit: the seed's table (kinds 1–26,
 * seed 002 §Framing) plus the config-install kinds numbered from 32 (seed 004, see `mod.ts`) and the channel gate's
 * kinds 37–41 (the launch capability proven as the channel key, `attach.ts`). Kinds 0, 27–31, 36 (the retired
 * AuthHello: Attach took its place) and 42–255 are unassigned: a header naming one is malformed.
 *
 * @module
 */

const KIB = 1024;

/** Every assigned kind, by the seed's name. */
export const Kind = {
  Ping: 1,
  Pong: 2,
  Echo: 3,
  Stop: 4,
  Stopped: 5,
  RootConfig: 6,
  Ready: 7,
  RootFailed: 8,
  Probe: 9,
  Report: 10,
  ProbeFailed: 11,
  ExecStart: 12,
  ExecInput: 13,
  ExecInputEnd: 14,
  ExecCancel: 15,
  ExecCredit: 16,
  ExecStarted: 17,
  ExecOutput: 18,
  ExecEnd: 19,
  ExecInputClosed: 20,
  ExecTerminal: 21,
  Maps: 22,
  Mapped: 23,
  MapFailed: 24,
  Start: 25,
  Started: 26,
  AgentConfigVersion: 32,
  AgentConfigChunk: 33,
  AgentConfigEnd: 34,
  AgentConfigResult: 35,
  AuthChallenge: 37,
  AuthProof: 38,
  Attach: 39,
  Attached: 40,
  AttachRefused: 41,
} as const;

/** A kind number that the framing assigns. */
export type KindNumber = typeof Kind[keyof typeof Kind];

/** Who sends a kind: the host program, the guest agent, or either (ExecCredit). */
export type Sender = "host" | "guest" | "both";

/** One row of the kinds table. */
export interface KindSpec {
  readonly kind: KindNumber;
  readonly name: keyof typeof Kind;
  /** The most bytes its body may hold; 0 for a kind without a body. */
  readonly limit: number;
  readonly sender: Sender;
}

/** The largest Echo, Report, Maps part, execution start, input and output body: 256 KiB. */
export const MAX_DATA_BODY = 256 * KIB;
/** The largest body of a configuration, readiness, failure or probe: 4 KiB. */
export const MAX_TEXT_BODY = 4 * KIB;
/** The largest body of the small execution messages: 64 bytes. */
export const MAX_EXEC_CONTROL_BODY = 64;
/** The largest config-install chunk: 512 KiB, the seed 004 `installChunkBytes`. */
export const MAX_CONFIG_CHUNK = 512 * KIB;
/** The header: the body's length (u32 LE), then the kind (u8). */
export const HEADER_BYTES = 5;

function row(name: keyof typeof Kind, limit: number, sender: Sender): KindSpec {
  return { kind: Kind[name], name, limit, sender };
}

/** The table, one row per assigned kind, in kind order. */
export const KINDS: readonly KindSpec[] = [
  row("Ping", 0, "host"),
  row("Pong", 0, "guest"),
  row("Echo", MAX_DATA_BODY, "both"),
  row("Stop", 0, "host"),
  row("Stopped", 0, "guest"),
  row("RootConfig", MAX_TEXT_BODY, "host"),
  row("Ready", MAX_TEXT_BODY, "guest"),
  row("RootFailed", MAX_TEXT_BODY, "guest"),
  row("Probe", MAX_TEXT_BODY, "host"),
  row("Report", MAX_DATA_BODY, "guest"),
  row("ProbeFailed", MAX_TEXT_BODY, "guest"),
  row("ExecStart", MAX_DATA_BODY, "host"),
  row("ExecInput", MAX_DATA_BODY, "host"),
  row("ExecInputEnd", MAX_EXEC_CONTROL_BODY, "host"),
  row("ExecCancel", MAX_EXEC_CONTROL_BODY, "host"),
  row("ExecCredit", MAX_EXEC_CONTROL_BODY, "both"),
  row("ExecStarted", MAX_EXEC_CONTROL_BODY, "guest"),
  row("ExecOutput", MAX_DATA_BODY, "guest"),
  row("ExecEnd", MAX_EXEC_CONTROL_BODY, "guest"),
  row("ExecInputClosed", MAX_EXEC_CONTROL_BODY, "guest"),
  row("ExecTerminal", MAX_EXEC_CONTROL_BODY, "guest"),
  row("Maps", MAX_DATA_BODY, "host"),
  row("Mapped", 0, "guest"),
  row("MapFailed", MAX_TEXT_BODY, "guest"),
  row("Start", 0, "host"),
  row("Started", 0, "guest"),
  row("AgentConfigVersion", MAX_TEXT_BODY, "host"),
  row("AgentConfigChunk", MAX_CONFIG_CHUNK, "host"),
  row("AgentConfigEnd", 0, "host"),
  row("AgentConfigResult", MAX_TEXT_BODY, "guest"),
  row("AuthChallenge", 48, "guest"),
  row("AuthProof", 32, "host"),
  row("Attach", 16, "host"),
  row("Attached", 48, "guest"),
  row("AttachRefused", 16, "guest"),
];

const BY_KIND: (KindSpec | undefined)[] = new Array(256).fill(undefined);
for (const k of KINDS) BY_KIND[k.kind] = k;

/** The row of `kind`, or undefined for an unassigned kind. */
export function kindSpec(kind: number): KindSpec | undefined {
  return BY_KIND[kind];
}

/** The largest body any kind allows: what a decoder's reassembly buffer may grow to. */
export const MAX_BODY: number = Math.max(...KINDS.map((k) => k.limit));

/** Per-kind limit for the decoder's hot path, -1 for an unassigned kind. */
export const LIMITS: Int32Array = (() => {
  const a = new Int32Array(256).fill(-1);
  for (const k of KINDS) a[k.kind] = k.limit;
  return a;
})();

/** Bit 1: the host may send it; bit 2: the guest may send it. */
export const SENDERS: Uint8Array = (() => {
  const a = new Uint8Array(256);
  for (const k of KINDS) a[k.kind] = k.sender === "host" ? 1 : k.sender === "guest" ? 2 : 3;
  return a;
})();
