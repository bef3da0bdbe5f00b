/**
 * The guest's end of the control session: a byte stream that may report a reset (a new host attached in a new
 * epoch, see `core/framing/mod.ts`) or its end.
 *
 * @module
 */

/** A read's report that the host side went away and a new epoch starts with a new message. */
export const RESET: unique symbol = Symbol("reset");

/** A byte stream to the host. */
export interface Transport {
  /**
   * The next bytes (a view valid until the next read), {@link RESET}, or null at the end of the stream.
   * Throws when the stream fails.
   */
  read(): Promise<Uint8Array | typeof RESET | null>;
  /** Writes every byte, in order. */
  write(bytes: Uint8Array): Promise<void>;
  /** Closes what the transport opened. */
  close(): void;
}

/** Something with Deno's `read`/`write` shape: `Deno.stdin`, `Deno.stdout`, a `Deno.FsFile`, a `Deno.Conn`. */
export interface RawReader {
  read(p: Uint8Array): Promise<number | null>;
  /** The blocking read, where there is one (`Deno.stdin`, a `Deno.FsFile`): used with {@link FileTransportOptions.blocking}. */
  readSync?(p: Uint8Array): number | null;
}
/** The writing side of {@link RawReader}. */
export interface RawWriter {
  write(p: Uint8Array): Promise<number>;
  /** The blocking write, where there is one: used with {@link FileTransportOptions.blocking}. */
  writeSync?(p: Uint8Array): number;
}

/** Options of {@link fileTransport}. */
export interface FileTransportOptions {
  /** Read buffer size; 64 KiB by default. */
  readonly bufferSize?: number;
  /**
   * Take end of file as a reset and keep reading, as on a VM's control port, whose reads return 0 bytes while
   * the host side is away; the transport then retries every `retryMs` (100 ms) until bytes arrive.
   */
  readonly resetOnEof?: boolean;
  readonly retryMs?: number;
  /** Called by close(). */
  readonly onClose?: () => void;
  /**
   * Read and write with the blocking calls, on the event loop's own thread, where the reader and writer have them.
   * Deno does not poll stdio or device files: each async read or write is handed to its blocking pool and back, two
   * thread handoffs a call, four an Echo, which cost more than the bytes on a loaded host. Only for a caller that
   * serves one message at a time and runs nothing else meanwhile (`guest serve`: no timer, no signal listener; its
   * logger writes synchronously): while a read waits for the host, the event loop waits with it.
   *
   * Over `Deno.stdout` (a pipe, or a virtio port the init hands in as standard output) a message is not always one
   * write: Deno's stdout is Rust's line-buffered `Stdout`, which writes up to the last 0x0A byte, then the rest, so a
   * message holding that byte leaves in two writes (strace: 16 + 5 bytes for a 21-byte Echo) and the host may read it
   * in two chunks. The framing does not care; it costs the host a second wake-up. The role's flags allow no other
   * writer of fd 1: `/dev/stdout` needs `--allow-all`, and `node:net`'s `Socket({ fd: 1 })` refuses a character device
   * (the virtio port) and measured slower over a pipe (issue 24).
   */
  readonly blocking?: boolean;
}

/** A transport over a reader and a writer. */
export function fileTransport(r: RawReader, w: RawWriter, opts: FileTransportOptions = {}): Transport {
  const buf = new Uint8Array(opts.bufferSize ?? 64 * 1024);
  let away = false;
  const readSync = opts.blocking === true ? r.readSync?.bind(r) : undefined;
  const writeSync = opts.blocking === true ? w.writeSync?.bind(w) : undefined;
  return {
    async read() {
      for (;;) {
        const n = readSync !== undefined ? readSync(buf) : await r.read(buf);
        if (n === null || n === 0) {
          if (!opts.resetOnEof) return null;
          if (!away) {
            away = true;
            return RESET;
          }
          await new Promise((res) => setTimeout(res, opts.retryMs ?? 100));
          continue;
        }
        away = false;
        return buf.subarray(0, n);
      }
    },
    async write(bytes) {
      let off = 0;
      if (writeSync !== undefined) { while (off < bytes.length) off += writeSync(bytes.subarray(off)); }
      else while (off < bytes.length) off += await w.write(bytes.subarray(off));
    },
    close() {
      opts.onClose?.();
    },
  };
}
