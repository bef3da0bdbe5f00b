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

/** A conn over a child's stdout (to read) and stdin (to write), such as `bcd-guest serve` run over pipes. */
export function childConn(child: { stdin: WritableStream<Uint8Array>; stdout: ReadableStream<Uint8Array> }): ByteConn {
  const reader = child.stdout.getReader({ mode: "byob" });
  const writer = child.stdin.getWriter();
  let closed = false;
  return {
    async read(p) {
      const { value, done } = await reader.read(new Uint8Array(p.length));
      if (done || value === undefined) return null;
      p.set(value);
      return value.length;
    },
    async write(p) {
      await writer.write(p.slice());
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
