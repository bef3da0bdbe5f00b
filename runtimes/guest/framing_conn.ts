/**
 * The host's end of the control stream, as the framing client sees it: anything with Deno's read/write/close
 * shape (a `Deno.Conn`, a `Deno.FsFile`), or a child process's pipes through {@link childConn}.
 *
 * @module
 */

/** A byte stream to the guest agent. */
export interface ByteConn {
  read(p: Uint8Array): Promise<number | null>;
  write(p: Uint8Array): Promise<number>;
  close(): void;
}

/**
 * A conn over a child's stdout (to read) and stdin (to write), such as `bcd-guest serve` run over pipes.
 *
 * Nothing is allocated or copied per call beyond what a pipe needs: a read reuses the buffer the BYOB reader gave
 * back last time (a BYOB read transfers the buffer it is given, so one buffer circulates), and a write hands the
 * caller's bytes to the stream as they are (the caller awaits it and leaves the bytes alone until then, as with
 * `Deno.Conn.write`).
 */
export function childConn(child: { stdin: WritableStream<Uint8Array>; stdout: ReadableStream<Uint8Array> }): ByteConn {
  const reader = child.stdout.getReader({ mode: "byob" });
  const writer = child.stdin.getWriter();
  let spare: ArrayBuffer | null = null;
  let closed = false;
  return {
    async read(p) {
      const into = spare !== null && spare.byteLength >= p.length
        ? new Uint8Array(spare, 0, p.length)
        : new Uint8Array(p.length);
      spare = null;
      const { value, done } = await reader.read(into);
      if (done || value === undefined) return null;
      p.set(value);
      spare = value.buffer as ArrayBuffer;
      return value.length;
    },
    async write(p) {
      await writer.write(p);
      return p.length;
    },
    close() {
      if (closed) return;
      closed = true;
      writer.close().catch(() => {/* the child may have gone */});
      reader.cancel().catch(() => {/* the child may have gone */});
    },
  };
}
