/**
 * The session's transport: one WebSocket, one binary message per protobuf frame. TLS (`wss:`) in production, plain
 * `ws:` only to a loopback address (tests, the demo; `url_policy.ts`). The node connects with its own RFC 6455 client
 * (`connectWebSocket` in `ws_client.ts`, which bounds a fragmented message while it arrives); {@link wrapWebSocket}
 * wraps a `WebSocket` of the Web API, the gateway side of an upgraded request in the testbed.
 *
 * @module
 */
import { boundedString } from "../log/bounded_text.ts";

/** A bidirectional frame channel. */
export interface FrameTransport {
  /** Queues one frame; false when the channel is closed. */
  send(frame: Uint8Array): boolean;
  /** The next frame, or `undefined` once the channel is closed and drained. */
  receive(): Promise<Uint8Array | undefined>;
  close(code?: number, reason?: string): void;
  /** Why the channel closed (`code reason`), once it has. */
  readonly closedReason: string | undefined;
}

/** A frame larger than this is refused by the transport before the protobuf layer sees it. */
export const MAX_TRANSPORT_FRAME_BYTES = 4 * 1024 * 1024;

/** A transport-level failure (connect refused, a text frame, an oversize frame). */
export class TransportError extends Error {
  override name = "TransportError";
}

/**
 * The code a Web API `WebSocket.close()` is given for `code`: it throws `InvalidAccessError` for anything but 1000
 * and 3000–4999 (so for 1002, 1003, 1008, 1009), so an RFC code 1xxx other than 1000 goes out in the private range
 * as 4xxx (1003 → 4003), with the reason unchanged.
 */
export function webApiCloseCode(code: number): number {
  if (code === 1000 || (code >= 3000 && code <= 4999)) return code;
  if (code > 1000 && code < 2000) return 3000 + code;
  return 1000;
}

/**
 * Wraps an open (or opening) WebSocket as a {@link FrameTransport}. Nothing it does in a listener can throw out of
 * it: a `close()` the WebSocket refuses still finishes the transport.
 */
export function wrapWebSocket(ws: WebSocket, maxFrameBytes = MAX_TRANSPORT_FRAME_BYTES): FrameTransport {
  ws.binaryType = "arraybuffer";
  const queue: Uint8Array[] = [];
  const waiters: ((v: Uint8Array | undefined) => void)[] = [];
  let closed: string | undefined;
  const finish = (why: string) => {
    if (closed !== undefined) return;
    closed = why;
    for (const w of waiters.splice(0)) w(undefined);
  };
  const closeWs = (code: number, reason: string) => {
    try {
      ws.close(webApiCloseCode(code), boundedString(reason, 123));
    } catch (e) {
      if (!(e instanceof DOMException)) throw e;
    }
  };
  ws.addEventListener("message", (ev: MessageEvent) => {
    if (closed !== undefined) return;
    if (!(ev.data instanceof ArrayBuffer)) {
      finish("1003 text frame refused");
      closeWs(1003, "binary frames only");
      return;
    }
    if (ev.data.byteLength > maxFrameBytes) {
      finish(`1009 frame of ${ev.data.byteLength} bytes over ${maxFrameBytes}`);
      closeWs(1009, "frame too large");
      return;
    }
    const frame = new Uint8Array(ev.data);
    const w = waiters.shift();
    if (w) w(frame);
    else queue.push(frame);
  });
  ws.addEventListener("close", (ev: CloseEvent) => finish(`${ev.code} ${ev.reason}`.trim()));
  ws.addEventListener("error", () => finish("error"));
  return {
    send(frame) {
      if (closed !== undefined || ws.readyState !== WebSocket.OPEN) return false;
      ws.send(frame);
      return true;
    },
    receive() {
      const f = queue.shift();
      if (f) return Promise.resolve(f);
      if (closed !== undefined) return Promise.resolve(undefined);
      return new Promise((resolve) => waiters.push(resolve));
    },
    close(code = 1000, reason = "") {
      finish(`${code} ${reason}`.trim());
      closeWs(code, reason);
    },
    get closedReason() {
      return closed;
    },
  };
}
