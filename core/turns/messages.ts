/**
 * The messages of the guest turn protocol (seed 001), as a closed union per direction, and the field schema the
 * codec enforces.
 *
 * @module
 */

/** Which side sends a message. `Ping` and `Pong` travel both ways. */
export type Direction = "guest-to-host" | "host-to-guest";

/** `Hello`: the guest's boot handshake; first on every connection. */
export interface Hello {
  readonly type: "Hello";
  /** The VM's UUID. */
  readonly vm_id: string;
  readonly guestd_version: string;
}
/** `TurnStarted`: a unit of guest work began. */
export interface TurnStarted {
  readonly type: "TurnStarted";
  readonly turn_id: number;
  /** Integer nanoseconds since the Unix epoch, as the guest observed them. */
  readonly ts: bigint;
}
/** `TurnEnded`: that turn finished. */
export interface TurnEnded {
  readonly type: "TurnEnded";
  readonly turn_id: number;
  readonly ts: bigint;
}
/** `DrainAck`: the reply to `DrainRequest`; `in_flight` is the running turn or `null`, never omitted. */
export interface DrainAck {
  readonly type: "DrainAck";
  readonly in_flight: number | null;
}
/** `Resumed`: first message after a restore on the target host. */
export interface Resumed {
  readonly type: "Resumed";
  readonly ts: bigint;
}
/** `Ping`: liveness, either direction. */
export interface Ping {
  readonly type: "Ping";
}
/** `Pong`: liveness reply, either direction. */
export interface Pong {
  readonly type: "Pong";
}
/** `Secrets`: environment for the workload, only ever over the channel. */
export interface Secrets {
  readonly type: "Secrets";
  readonly env: Readonly<Record<string, string>>;
}
/** `DrainRequest`: gate new turns and report what is in flight; the host waits `deadline_ms` for it. */
export interface DrainRequest {
  readonly type: "DrainRequest";
  readonly deadline_ms: number;
}
/** `DrainCancel`: migration aborted; un-gate and release queued turns. */
export interface DrainCancel {
  readonly type: "DrainCancel";
}
/** `RunTurn`: drive one unit of guest work with this id. */
export interface RunTurn {
  readonly type: "RunTurn";
  readonly turn_id: number;
}

/** `AuthChallenge` (bcd's, see `auth.ts`): right after `Hello`, the guest's nonce and its restore epoch. */
export interface AuthChallenge {
  readonly type: "AuthChallenge";
  /** 64 lowercase hex digits. */
  readonly nonce: string;
  readonly epoch: number;
}
/** `AuthProof` (bcd's): the host's nonce, the epoch it claims, and its MAC over both nonces and the epoch. */
export interface AuthProof {
  readonly type: "AuthProof";
  readonly nonce: string;
  readonly epoch: number;
  /** The host's wall clock when it sent the proof: after a restore the guest sets its clock from it. */
  readonly time_ns: bigint;
  readonly mac: string;
}
/** `AuthOk` (bcd's): the guest accepted the proof; its own MAC proves it holds the key too. */
export interface AuthOk {
  readonly type: "AuthOk";
  readonly mac: string;
}

/** Every message the guest may send. */
export type GuestMessage =
  | Hello
  | AuthChallenge
  | AuthOk
  | TurnStarted
  | TurnEnded
  | DrainAck
  | Resumed
  | Ping
  | Pong;
/** Every message the host may send. */
export type HostMessage = AuthProof | Secrets | DrainRequest | DrainCancel | RunTurn | Ping | Pong;
/** Every message of the protocol. */
export type TurnsMessage = GuestMessage | HostMessage;
/** The message names. */
export type TurnsMessageType = TurnsMessage["type"];

/** How one field is checked and written. */
export type FieldKind =
  /** A UUID string (8-4-4-4-12 hex digits). */
  | "uuid"
  /** A non-empty string of at most {@link MAX_SHORT_STRING} UTF-16 units. */
  | "short-string"
  /** A turn id: a whole number from 0 to `Number.MAX_SAFE_INTEGER`. */
  | "turn-id"
  /** A turn id or `null`; present always. */
  | "turn-id-or-null"
  /** Whole milliseconds, 0 to `Number.MAX_SAFE_INTEGER`. */
  | "duration-ms"
  /** Integer nanoseconds since the Unix epoch, 0 to 2^64-1, held as a bigint. */
  | "timestamp-ns"
  /** An object of string to string (environment variables). */
  | "env"
  /** 32 bytes as 64 lowercase hex digits (a nonce or a MAC). */
  | "hex-256"
  /** A restore epoch: a whole number from 0 to `Number.MAX_SAFE_INTEGER`. */
  | "epoch";

/** The longest `guestd_version` accepted. */
export const MAX_SHORT_STRING = 128;
/** The most entries a `Secrets.env` may hold. */
export const MAX_ENV_ENTRIES = 256;
/** The longest environment variable name accepted. */
export const MAX_ENV_NAME = 256;

/** One row of the message table: who sends it and its fields, in wire order. */
export interface MessageSchema {
  readonly directions: readonly Direction[];
  readonly fields: Readonly<Record<string, FieldKind>>;
}

const G: readonly Direction[] = ["guest-to-host"];
const H: readonly Direction[] = ["host-to-guest"];
const BOTH: readonly Direction[] = ["guest-to-host", "host-to-guest"];

/** The seed's two message tables, one row per message, plus bcd's three authentication messages. */
export const MESSAGE_SCHEMAS: Readonly<Record<TurnsMessageType, MessageSchema>> = {
  Hello: { directions: G, fields: { vm_id: "uuid", guestd_version: "short-string" } },
  AuthChallenge: { directions: G, fields: { nonce: "hex-256", epoch: "epoch" } },
  AuthProof: { directions: H, fields: { nonce: "hex-256", epoch: "epoch", time_ns: "timestamp-ns", mac: "hex-256" } },
  AuthOk: { directions: G, fields: { mac: "hex-256" } },
  TurnStarted: { directions: G, fields: { turn_id: "turn-id", ts: "timestamp-ns" } },
  TurnEnded: { directions: G, fields: { turn_id: "turn-id", ts: "timestamp-ns" } },
  DrainAck: { directions: G, fields: { in_flight: "turn-id-or-null" } },
  Resumed: { directions: G, fields: { ts: "timestamp-ns" } },
  Ping: { directions: BOTH, fields: {} },
  Pong: { directions: BOTH, fields: {} },
  Secrets: { directions: H, fields: { env: "env" } },
  DrainRequest: { directions: H, fields: { deadline_ms: "duration-ms" } },
  DrainCancel: { directions: H, fields: {} },
  RunTurn: { directions: H, fields: { turn_id: "turn-id" } },
};

/** Whether `name` is a message of the protocol. */
export function isMessageType(name: string): name is TurnsMessageType {
  return Object.hasOwn(MESSAGE_SCHEMAS, name);
}
