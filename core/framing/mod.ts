/**
 * The host↔guest control framing (seed 002 §Framing) and the encodings of its bodies.
 *
 * A message is a 5-byte header, the body's length (little-endian u32) then the kind (u8), then the body. The
 * {@link Decoder} reassembles messages across any chunking, checks each header (kind assigned, sent from the
 * other side, body within the kind's limit) before it takes any byte of the body, holds at most one partial
 * message in a reassembly buffer that it reuses, and hands out views, not copies. A malformed message ends the
 * stream ({@link FramingError}); a body that does not decode ({@link BodyError}) leaves the stream intact at the
 * start of the next message.
 *
 * ## Kinds
 *
 * | kind | message | body limit | from |
 * | --- | --- | --- | --- |
 * | 1–26 | the seed's table: Ping, Pong, Echo, Stop, Stopped, RootConfig, Ready, RootFailed, Probe, Report, ProbeFailed, the execution messages 12–21, Maps, Mapped, MapFailed, Start, Started | as the seed (`frame_kinds.ts`) | |
 * | 27–31 | unassigned (kept free so the seed's table can grow); a header naming one is malformed | | |
 * | 32 | AgentConfigVersion: the bundle's version, the first frame of an install (seed 004 §(b)) | 4 KiB | host |
 * | 33 | AgentConfigChunk: gzip-tar bytes of the bundle, in order, 512 KiB each but the last | 512 KiB | host |
 * | 34 | AgentConfigEnd: the end of the install's stream (the seed's client stream closes; a byte stream cannot) | none | host |
 * | 35 | AgentConfigResult: the result code (u8: 0 ok, 3 invalid-argument, 8 resource-exhausted, 9 failed-precondition, 13 internal), then the problem as UTF-8 | 4 KiB | guest |
 * | 36 | unassigned (the retired AuthHello: Attach took its place); malformed | | |
 * | 37 | AuthChallenge: the Attach's nonce, then the guest's 32-byte nonce (`attach.ts`) | 48 bytes | guest |
 * | 38 | AuthProof: the host's 32-byte MAC over both nonces | 32 bytes | host |
 * | 39 | Attach: a fresh 16-byte nonce; the first message of each epoch on a VM that holds a secret (`attach.ts`) | 16 bytes | host |
 * | 40 | Attached: the Attach's nonce, then (when the VM holds a secret the host proved) the guest's 32-byte MAC over both nonces (`auth.ts`) | 16 or 48 bytes | guest |
 * | 41 | AttachRefused: the host's proof failed (`capability-refused`); the Attach's nonce | 16 bytes | guest |
 * | 42–255 | unassigned; malformed | | |
 *
 * The guest answers an install once, after AgentConfigEnd: at the first refusal it keeps the refusal and ignores
 * the install's remaining chunks, so the stream stays in step. Frame order, a bad version or an unsafe bundle
 * are invalid-argument, wire bytes beyond the cap resource-exhausted, an install before the guest is provisioned
 * (before the worker's root is Ready) failed-precondition, anything else internal.
 *
 * ## Reattach: a new host in a new epoch
 *
 * The seed's session carries its epochs in records below the framing; bcd has no such layer, and the framing
 * itself cannot find a boundary after a partial message (the reason a malformed message ends the stream), so a
 * reset is never a message. It is an event of the transport under the framing:
 *
 * - `serve` on stdin/stdout: the stream is the attachment. Its end ends serving (exit 0); a host that restarts
 *   starts a new `serve`.
 * - `init TTY` on the VM's control port: the host side's disconnect reaches the guest as end of file on the port
 *   (a virtio-serial port reads 0 bytes while its host side is unconnected). The guest takes it as a reset: it
 *   drops the partial message ({@link Decoder.reset}), drops what it queued for the old host (a new epoch starts
 *   with a new message both ways), abandons every execution (cause `reset`: each runs to its end detached, and
 *   the new host hears nothing of it) and any install in progress, keeps its root, and reads again once the
 *   host side is back.
 * - The new host cannot know whether the old epoch left the tail of a guest message in the transport, so its
 *   client's attach sends an Echo of a fresh 16-byte nonce and discards every byte before that Echo's answer
 *   (the 21 bytes of its header and nonce, found by search): it then stands at a message boundary, with a
 *   chance of 2^-128 of being fooled by a body that holds the same 21 bytes.
 *
 * @module
 */
export * from "./errors.ts";
export * from "./frame_kinds.ts";
export * from "./decoder.ts";
export * from "./encoder.ts";
export * from "./root_config.ts";
export * from "./root_failure.ts";
export * from "./probe.ts";
export * from "./exec_start.ts";
export * from "./exec_outcome.ts";
export * from "./exec.ts";
export * from "./maps.ts";
export * from "./agent_config_frames.ts";
export * from "./auth.ts";
export * from "./attach.ts";
