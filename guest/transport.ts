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
}
/** The writing side of {@link RawReader}. */
export interface RawWriter {
  write(p: Uint8Array): Promise<number>;
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
}

/** A transport over a reader and a writer. */
export function fileTransport(r: RawReader, w: RawWriter, opts: FileTransportOptions = {}): Transport {
  const buf = new Uint8Array(opts.bufferSize ?? 64 * 1024);
  let away = false;
  return {
    async read() {
      for (;;) {
        const n = await r.read(buf);
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
      while (off < bytes.length) off += await w.write(bytes.subarray(off));
    },
    close() {
      opts.onClose?.();
    },
  };
}
