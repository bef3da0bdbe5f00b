/**
 * The session's transport: one WebSocket, one binary message per protobuf frame. TLS (`wss:`) in production, plain
 * `ws:` on loopback in tests. The same wrapper serves the gateway side of an upgraded request.
 *
 * @module
 */

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

/** Wraps an open (or opening) WebSocket as a {@link FrameTransport}. */
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
  ws.addEventListener("message", (ev: MessageEvent) => {
    if (!(ev.data instanceof ArrayBuffer)) {
      finish("1003 text frame refused");
      ws.close(1003, "binary frames only");
      return;
    }
    if (ev.data.byteLength > maxFrameBytes) {
      finish(`1009 frame of ${ev.data.byteLength} bytes over ${maxFrameBytes}`);
      ws.close(1009, "frame too large");
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
      try {
        ws.close(code, reason);
      } catch (e) {
        if (!(e instanceof DOMException)) throw e;
      }
    },
    get closedReason() {
      return closed;
    },
  };
}

/** Opens a WebSocket to `url` and waits until it is open (or fails within `timeoutMs`). */
export function connectWebSocket(url: string, timeoutMs = 10_000): Promise<FrameTransport> {
  return new Promise((resolve, reject) => {
    let ws: WebSocket;
    try {
      ws = new WebSocket(url);
    } catch (e) {
      reject(new TransportError(`cannot open ${url}: ${e instanceof Error ? e.message : e}`, { cause: e }));
      return;
    }
    const t = wrapWebSocket(ws);
    const timer = setTimeout(() => {
      t.close(1000, "connect timeout");
      reject(new TransportError(`connect to ${url} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    ws.addEventListener("open", () => {
      clearTimeout(timer);
      resolve(t);
    }, { once: true });
    ws.addEventListener("close", () => {
      clearTimeout(timer);
      reject(new TransportError(`connect to ${url} failed: ${t.closedReason ?? "closed"}`));
    }, { once: true });
  });
}
