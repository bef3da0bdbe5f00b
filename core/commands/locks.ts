/**
 * Per-resource locks (000 §Lanes, credits and workers): a GPU UUID, a disk or an allocation is acted on by one
 * command at a time, whichever lane it runs in. Keys are taken in sorted order, each key's waiters in FIFO order, so
 * two commands never deadlock and a waiter is never overtaken on a key.
 *
 * Keys are strings such as `gpu:GPU-1c2…`, `disk:/dev/nvme0n1`, `allocation:alloc-7`; `host` stands for the whole
 * machine (a reboot) and conflicts with every other key.
 *
 * @module
 */

/** The key that stands for the whole host. */
export const HOST_LOCK = "host";

/** Thrown into a waiter whose signal aborted before it got its locks. */
export class LockWaitAborted extends Error {
  override name = "LockWaitAborted";
}

interface Waiter {
  readonly grant: () => void;
}

/** A set of named exclusive locks with FIFO waiters; `host` excludes every other key. */
export class ResourceLocks {
  readonly #held = new Set<string>();
  readonly #waiters = new Map<string, Waiter[]>();
  /** Acquirers of ordinary keys past the host gate (holding or waiting for keys). */
  #holders = 0;
  #hostHeld = false;
  readonly #hostWaiters: Waiter[] = [];
  readonly #gateWaiters: Waiter[] = [];

  /** Whether `key` is held now (for tests and status). */
  isHeld(key: string): boolean {
    return key === HOST_LOCK ? this.#hostHeld : this.#held.has(key);
  }

  /**
   * Takes every key of `keys` (deduplicated, sorted; `host` waits for every other holder to leave and blocks new
   * ones) and returns the function that releases them. Rejects with {@link LockWaitAborted} when `signal` aborts
   * first; keys taken so far are given back.
   */
  async acquire(keys: readonly string[], signal?: AbortSignal): Promise<() => void> {
    return this.tryAcquire(keys) ?? await this.#acquire(keys, signal);
  }

  /**
   * {@link acquire} when it need not wait: every key of `keys` free and no host lock held or waited for. Returns the
   * release then, with the keys taken; otherwise takes nothing and returns undefined. Most commands name no key, or
   * keys no other command holds: they skip the promise of {@link acquire} and its turns.
   */
  tryAcquire(keys: readonly string[]): (() => void) | undefined {
    if (this.#hostHeld || this.#hostWaiters.length > 0) return undefined;
    if (keys.length === 0) {
      this.#holders++;
      return this.#releaser([]);
    }
    const sorted = [...new Set(keys)].sort();
    if (sorted.includes(HOST_LOCK) || sorted.some((k) => this.#held.has(k))) return undefined;
    this.#holders++;
    for (const k of sorted) this.#held.add(k);
    return this.#releaser(sorted);
  }

  async #acquire(keys: readonly string[], signal?: AbortSignal): Promise<() => void> {
    const sorted = [...new Set(keys)].sort();
    if (sorted.includes(HOST_LOCK)) return await this.#acquireHost(signal);
    while (this.#hostHeld || this.#hostWaiters.length > 0) await this.#enqueue(this.#gateWaiters, signal);
    this.#holders++;
    const taken: string[] = [];
    try {
      for (const k of sorted) {
        // Take a free key synchronously, so that acquirers queue on each key in the order they called.
        if (!this.#held.has(k)) this.#held.add(k);
        else await this.#acquireOne(k, signal);
        taken.push(k);
      }
    } catch (e) {
      for (const k of taken) this.#releaseOne(k);
      this.#leave();
      throw e;
    }
    return this.#releaser(taken);
  }

  /** Releases `taken` and leaves the holders, once however often it is called. */
  #releaser(taken: readonly string[]): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const k of taken) this.#releaseOne(k);
      this.#leave();
    };
  }

  #leave(): void {
    this.#holders--;
    this.#wake();
  }

  #acquireOne(key: string, signal?: AbortSignal): Promise<void> {
    if (!this.#held.has(key)) {
      this.#held.add(key);
      return Promise.resolve();
    }
    let q = this.#waiters.get(key);
    if (q === undefined) {
      q = [];
      this.#waiters.set(key, q);
    }
    return this.#enqueue(q, signal);
  }

  /** Waits in `q` until granted; the granter has already updated the lock state for the waiter. */
  #enqueue(q: Waiter[], signal?: AbortSignal, onAborted?: () => void): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(new LockWaitAborted("the lock wait was aborted"));
      const onAbort = () => {
        const i = q.indexOf(w);
        if (i >= 0) q.splice(i, 1);
        onAborted?.();
        reject(new LockWaitAborted("the lock wait was aborted"));
      };
      const w: Waiter = {
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      q.push(w);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  #releaseOne(key: string): void {
    const q = this.#waiters.get(key);
    const next = q?.shift();
    if (q !== undefined && q.length === 0) this.#waiters.delete(key);
    if (next !== undefined) next.grant();
    else this.#held.delete(key);
  }

  async #acquireHost(signal?: AbortSignal): Promise<() => void> {
    if (this.#hostHeld || this.#holders > 0 || this.#hostWaiters.length > 0) {
      await this.#enqueue(this.#hostWaiters, signal, () => this.#wake());
    } else {
      this.#hostHeld = true;
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#hostHeld = false;
      this.#wake();
    };
  }

  /** Hands the host lock to the next host waiter when nothing else holds, else opens the gate to ordinary keys. */
  #wake(): void {
    if (this.#hostHeld) return;
    if (this.#hostWaiters.length > 0) {
      if (this.#holders === 0) {
        this.#hostHeld = true;
        this.#hostWaiters.shift()!.grant();
      }
      return;
    }
    if (this.#gateWaiters.length > 0) { for (const w of this.#gateWaiters.splice(0)) w.grant(); }
  }
}
