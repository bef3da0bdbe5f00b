/**
 * The session's first connection, opened ahead of the session: the daemon starts opening it (TCP, TLS, the WebSocket
 * upgrade) while its journal opens, the runtimes are probed and the agent starts, instead of after (issue 24). Nothing
 * is read from it or sent on it until the session takes it: the gateway's `Challenge` waits in the socket (the node's
 * WebSocket client reads only when asked), so `Hello` still goes out only once the agent has started and knows what
 * it carries (journal id, held generation and hash, runtimes, capabilities).
 *
 * The first {@link Preconnected.connect} takes that connection, or its failure, which the session then handles like
 * any failed connect (backoff, retry); every later call opens a new one. A connection nobody took (a start that
 * failed, an agent stopped before it ran) is closed by {@link Preconnected.discard}.
 *
 * @module
 */
import type { FrameTransport } from "./transport.ts";

/** A connect whose first attempt is already under way. */
export interface Preconnected {
  /** The attempt begun at {@link preconnect} the first time, a new connection each time after. */
  connect(): Promise<FrameTransport>;
  /**
   * Closes the early connection when nothing took it, once it is open; returns at once, so a start that failed does
   * not wait on a gateway that does not answer (its failure, if it fails, is nobody's to handle).
   */
  discard(): void;
}

type _Attempt = { readonly ok: FrameTransport } | { readonly failed: unknown };

/** Begins `connect()` now; see {@link Preconnected}. */
export function preconnect(connect: () => Promise<FrameTransport>): Preconnected {
  // Settled into a value at once, so a failure nobody has asked for yet is not an unhandled rejection; it is thrown
  // to whoever takes the attempt.
  let early: Promise<_Attempt> | undefined = connect().then((ok) => ({ ok }), (failed) => ({ failed }));
  return {
    async connect() {
      const attempt = early;
      if (attempt === undefined) return await connect();
      early = undefined;
      const r = await attempt;
      if ("failed" in r) throw r.failed;
      return r.ok;
    },
    discard() {
      const attempt = early;
      early = undefined;
      void attempt?.then((r) => {
        if ("ok" in r) r.ok.close(1000, "the agent did not start its session");
      });
    },
  };
}
