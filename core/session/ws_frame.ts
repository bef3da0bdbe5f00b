/**
 * RFC 6455 framing, both directions: {@link encodeWsFrame} builds one frame (masked when a client sends it), and
 * {@link readWsFrameHeader} parses a header from bytes already read, refusing what no peer of ours may send before its
 * payload is read. The node's own WebSocket client (`ws_client.ts`) and the hostile-gateway harness
 * (`fixtures/testbed/hostile_gateway.ts`) share it.
 *
 * @module
 */
import { boundedString } from "../log/bounded_text.ts";

/** Frame opcodes (RFC 6455 §5.2). */
export const WsOpcode = {
  continuation: 0x0,
  text: 0x1,
  binary: 0x2,
  close: 0x8,
  ping: 0x9,
  pong: 0xa,
} as const;

/** The GUID of the opening handshake (RFC 6455 §1.3). */
export const WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/** A control frame's payload limit (RFC 6455 §5.5). */
export const MAX_CONTROL_PAYLOAD = 125;

/** A violation of the framing rules; `code` is the close code to answer with (1002, 1003, 1009). */
export class WsProtocolError extends Error {
  override name = "WsProtocolError";
  constructor(readonly code: number, message: string) {
    super(message);
  }
}

/** One frame's header. */
export interface WsFrameHeader {
  readonly fin: boolean;
  readonly opcode: number;
  readonly masked: boolean;
  readonly mask: Uint8Array | undefined;
  readonly payloadLength: number;
  /** Header bytes (2 to 14). */
  readonly headerLength: number;
}

/**
 * Parses the header at the start of `buf`; `undefined` when `buf` does not hold all of it yet. Refuses reserved
 * bits (no extension is ever negotiated), unknown opcodes, fragmented or oversize control frames, and a 64-bit
 * length with its top bit set; the payload's size is the caller's to bound.
 */
export function readWsFrameHeader(buf: Uint8Array): WsFrameHeader | undefined {
  if (buf.length < 2) return undefined;
  const b0 = buf[0]!, b1 = buf[1]!;
  const fin = (b0 & 0x80) !== 0;
  if ((b0 & 0x70) !== 0) throw new WsProtocolError(1002, "a reserved bit is set (no extension was negotiated)");
  const opcode = b0 & 0x0f;
  if (![0x0, 0x1, 0x2, 0x8, 0x9, 0xa].includes(opcode)) throw new WsProtocolError(1002, `opcode ${opcode}`);
  const masked = (b1 & 0x80) !== 0;
  let len = b1 & 0x7f;
  let off = 2;
  if (len === 126) {
    if (buf.length < 4) return undefined;
    len = (buf[2]! << 8) | buf[3]!;
    off = 4;
  } else if (len === 127) {
    if (buf.length < 10) return undefined;
    if ((buf[2]! & 0x80) !== 0) throw new WsProtocolError(1002, "a 64-bit length with its top bit set");
    const hi = ((buf[2]! << 24) >>> 0) + (buf[3]! << 16) + (buf[4]! << 8) + buf[5]!;
    const lo = ((buf[6]! << 24) >>> 0) + (buf[7]! << 16) + (buf[8]! << 8) + buf[9]!;
    len = hi * 2 ** 32 + lo;
    if (!Number.isSafeInteger(len)) throw new WsProtocolError(1009, "a frame length beyond 2^53");
    off = 10;
  }
  if (opcode >= 0x8) {
    if (!fin) throw new WsProtocolError(1002, "a fragmented control frame");
    if (len > MAX_CONTROL_PAYLOAD) throw new WsProtocolError(1002, `a control frame of ${len} bytes`);
  }
  let mask: Uint8Array | undefined;
  if (masked) {
    if (buf.length < off + 4) return undefined;
    mask = buf.slice(off, off + 4);
    off += 4;
  }
  return { fin, opcode, masked, mask, payloadLength: len, headerLength: off };
}

/** XORs `data` in place with the 4-byte `mask`. */
export function applyWsMask(data: Uint8Array, mask: Uint8Array): void {
  for (let i = 0; i < data.length; i++) data[i]! ^= mask[i & 3]!;
}

/** Random bytes that mask keys are cut from, 4 per frame, each used once. */
const _maskPool = new Uint8Array(4096);
let _maskAt = _maskPool.length;

/**
 * A fresh mask key from the CSPRNG (RFC 6455 §5.3). The pool is refilled in one call when used up: a settled
 * command sends three frames, and a call to `getRandomValues` for each key cost the event loop ~0.75 µs (issue 24).
 */
function _maskKey(): Uint8Array {
  if (_maskAt >= _maskPool.length) {
    crypto.getRandomValues(_maskPool);
    _maskAt = 0;
  }
  return _maskPool.subarray(_maskAt, _maskAt += 4);
}

/**
 * One frame: `fin` false starts or continues a fragmented message. A client masks every frame it sends (`mask`
 * true); a server never does.
 */
export function encodeWsFrame(
  opcode: number,
  payload: Uint8Array,
  opts: { fin?: boolean; mask?: boolean } = {},
): Uint8Array {
  const fin = opts.fin ?? true;
  const n = payload.length;
  const lenBytes = n < 126 ? 0 : n < 65536 ? 2 : 8;
  const maskBytes = opts.mask ? 4 : 0;
  const out = new Uint8Array(2 + lenBytes + maskBytes + n);
  out[0] = (fin ? 0x80 : 0) | (opcode & 0x0f);
  const m = opts.mask ? 0x80 : 0;
  if (lenBytes === 0) out[1] = m | n;
  else if (lenBytes === 2) {
    out[1] = m | 126;
    out[2] = n >> 8;
    out[3] = n & 0xff;
  } else {
    out[1] = m | 127;
    const hi = Math.floor(n / 2 ** 32), lo = n >>> 0;
    out.set([hi >>> 24, (hi >> 16) & 0xff, (hi >> 8) & 0xff, hi & 0xff], 2);
    out.set([lo >>> 24, (lo >> 16) & 0xff, (lo >> 8) & 0xff, lo & 0xff], 6);
  }
  const at = 2 + lenBytes;
  out.set(payload, at + maskBytes);
  if (opts.mask) {
    const key = _maskKey();
    out.set(key, at);
    applyWsMask(out.subarray(at + 4), key);
  }
  return out;
}

/** A close frame's payload: the code, then a reason cut to fit the 125-byte limit on a character boundary. */
export function closePayload(code: number, reason: string): Uint8Array {
  let r = new TextEncoder().encode(reason);
  if (r.length > MAX_CONTROL_PAYLOAD - 2) {
    r = new TextEncoder().encode(boundedString(reason, MAX_CONTROL_PAYLOAD - 2));
  }
  const out = new Uint8Array(2 + r.length);
  out[0] = code >> 8;
  out[1] = code & 0xff;
  out.set(r, 2);
  return out;
}

/** `Sec-WebSocket-Accept` for `key` (RFC 6455 §4.2.2). */
export async function wsAcceptFor(key: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-1", new TextEncoder().encode(key + WS_GUID));
  return btoa(String.fromCharCode(...new Uint8Array(d)));
}
