/**
 * The guest turn protocol of seed 001 on the wire: its messages (a closed union per direction), the NDJSON codec
 * with its named refusals, and the bounded line splitter. Both the guest agent (`guest/turns/`) and the host
 * client (`runtimes/guest/`) speak through this module. Channel authentication (`auth.ts`, bcd's addition: a per-VM
 * key proven both ways right after `Hello`, and the restore epoch that alone lets a drained guest resume) too.
 *
 * @module
 */
export {
  CHANNEL_KEY_BYTES,
  ChannelAuthError,
  type ChannelAuthRefusal,
  type ChannelKey,
  channelProof,
  formatChannelKey,
  newChannelKey,
  newNonce,
  parseChannelKey,
  type ProofInput,
  verifyChannelProof,
} from "./auth.ts";
export { decodeLine, encodeMessage, FORBIDDEN_KEYS } from "./codec.ts";
export { TurnsProtocolError, type TurnsRefusalReason } from "./errors.ts";
export { DEFAULT_MAX_LINE_BYTES, type LineEvent, LineSplitter, readLines } from "./line_reader.ts";
export {
  type AuthChallenge,
  type AuthOk,
  type AuthProof,
  type Direction,
  type DrainAck,
  type DrainCancel,
  type DrainRequest,
  type GuestMessage,
  type Hello,
  type HostMessage,
  isMessageType,
  MESSAGE_SCHEMAS,
  type Ping,
  type Pong,
  type Resumed,
  type RunTurn,
  type Secrets,
  type TurnEnded,
  type TurnsMessage,
  type TurnsMessageType,
  type TurnStarted,
} from "./messages.ts";
