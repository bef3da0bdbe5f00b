/**
 * An in-memory control stream for tests: the guest's {@link Transport} and the host's `ByteConn` joined back to
 * back, with a reset that a test injects, chunking that a test chooses, and ends of either side.
 *
 * @module
 */
import { RESET, type Transport } from "./transport.ts";

type Item = Uint8Array | typeof RESET | null;

class Pipe<T> {
  readonly #items: T[] = [];
  #waiter: (() => void) | null = null;
  push(x: T): void {
    this.#items.push(x);
    const w = this.#waiter;
    this.#waiter = null;
    w?.();
  }
  /** The next item; a wakeAll() while waiting returns undefined-free by looping again. */
  async shift(): Promise<T> {
    for (;;) {
      if (this.#items.length > 0) return this.#items.shift()!;
      await new Promise<void>((r) => this.#waiter = r);
      if (this.#items.length === 0) return null as T;
    }
  }
  get length(): number {
    return this.#items.length;
  }
  unshift(x: T): void {
    this.#items.unshift(x);
  }
  wakeAll(): void {
    const w = this.#waiter;
    this.#waiter = null;
    w?.();
  }
}

/** Both ends of an in-memory control stream. */
export class MemoryStream {
  readonly #toGuest = new Pipe<Item>();
  readonly #toHost = new Pipe<Uint8Array | null>();
  #hostRest: Uint8Array | null = null;
  /** Bytes the guest wrote, in total. */
  guestWrote = 0;
  /** Splits what the host writes into pieces of this size (0: as written). */
  hostChunk = 0;
  /** When set, the guest's writes wait on it (a host that stops reading). */
  stall: Promise<void> | null = null;
  #guestClosed = false;

  /** The guest's end. */
  readonly guest: Transport = {
    read: async () => {
      const x = await this.#toGuest.shift();
      return x;
    },
    write: async (bytes) => {
      if (this.stall) await this.stall;
      if (this.#guestClosed) throw new Error("the host end is closed");
      this.guestWrote += bytes.length;
      this.#toHost.push(bytes.slice());
    },
    close: () => {
      this.#guestClosed = true;
      this.#toHost.push(null);
    },
  };

  #epoch = 0;
  #host = this.#hostEnd(0);

  /** The host's end of the current epoch, in the `ByteConn` shape. */
  get host(): { read(p: Uint8Array): Promise<number | null>; write(p: Uint8Array): Promise<number>; close(): void } {
    return this.#host;
  }

  #hostEnd(epoch: number) {
    return {
      read: async (p: Uint8Array): Promise<number | null> => {
        if (epoch !== this.#epoch) return null;
        let src = this.#hostRest;
        if (src === null) {
          const x = await this.#toHost.shift();
          if (epoch !== this.#epoch) {
            if (x !== null) this.#toHost.unshift(x);
            return null;
          }
          if (x === null) {
            this.#toHost.push(null);
            return null;
          }
          src = x;
        }
        const n = Math.min(p.length, src.length);
        p.set(src.subarray(0, n));
        this.#hostRest = n < src.length ? src.subarray(n) : null;
        return n;
      },
      write: (p: Uint8Array): Promise<number> => {
        if (epoch !== this.#epoch) return Promise.reject(new Error("this host's epoch ended"));
        const size = this.hostChunk > 0 ? this.hostChunk : p.length;
        for (let o = 0; o < p.length; o += size) this.#toGuest.push(p.slice(o, o + size));
        return Promise.resolve(p.length);
      },
      close: () => {
        if (epoch === this.#epoch) this.#toGuest.push(null);
      },
    };
  }

  /**
   * The host dies and a new one attaches: the old end reads its end, the guest reads a reset, and
   * {@link host} is the new epoch's end.
   */
  reattach(): void {
    this.#epoch++;
    this.#host = this.#hostEnd(this.#epoch);
    this.#toHost.wakeAll();
    this.#toGuest.push(RESET);
  }

  /** The host side went away and came back: the guest reads a reset. */
  reset(): void {
    this.#toGuest.push(RESET);
  }

  /** Raw bytes to the guest, bypassing any client. */
  sendRaw(bytes: Uint8Array): void {
    this.#toGuest.push(bytes.slice());
  }

  /** Ends the host's side of the stream (the guest reads the end). */
  endHost(): void {
    this.#toGuest.push(null);
  }

  /** Drops what the guest wrote and did not yet deliver (a new host does not see the old epoch's bytes here). */
  dropToHost(): void {
    while (this.#toHost.length > 0) void this.#toHost.shift();
    this.#hostRest = null;
  }
}
