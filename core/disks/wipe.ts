/**
 * Wiping one disk: the method ladder, the overwrite pass in chunks, and the read-back verification.
 *
 * The ladder (strongest first): the device's own methods as it offers them (NVMe sanitize, NVMe format with secure
 * erase, ATA secure erase, `blkdiscard --secure`, `blkdiscard`), then an overwrite pass (zeros, or a random pass when
 * asked). Each rung that runs is verified by reading back; a rung that fails, or whose read-back is not what it should
 * be, is recorded and the ladder goes on. Choices, written down (Ironic Python Agent's `erase_devices_express` is the
 * model):
 *
 * - after a device method the disk must read back as zeros. Discard is a hint to the block layer and a crypto erase
 *   leaves noise, so a device method whose read-back is not zero is not trusted: the ladder falls through to the
 *   overwrite, as IPA zeroes after a `blkdiscard` that does not guarantee zeros;
 * - a random pass is AES-CTR keystream under a key made for this wipe and forgotten after it, so the verification
 *   regenerates what each block should hold without keeping the pass;
 * - verification reads the first and the last MiB and {@link SAMPLE_BLOCKS} blocks of 4 KiB drawn at random over
 *   the disk (`sample`), or every byte (`all`); the first mismatch stops it and names its offset;
 * - the last rung failing its verification fails the wipe (`verify-failed`), never a partial success;
 * - cancel is seen between chunks of the overwrite and of the verification (a device method, once started, runs to
 *   its end: neither NVMe sanitize nor ATA secure erase can be stopped halfway).
 *
 * @module
 */
import {
  DEVICE_METHODS,
  type DeviceMethod,
  DeviceMethodFailed,
  type WipeDevice,
  type WipeMethod,
} from "./wipe_device.ts";

/** How the read-back covers the disk. */
export type VerifyMode = "sample" | "all";

/** The random 4 KiB blocks a sampled verification reads, beside the first and last MiB. */
export const SAMPLE_BLOCKS = 256;

/** The overwrite's and the full verification's chunk (4 MiB). */
export const DEFAULT_CHUNK = 4 * 1024 * 1024;

const _MIB = 1024 * 1024;
const _BLOCK = 4096;

/** What a wipe is asked to do. */
export interface WipeOptions {
  /** `zero` (default) or `random`: the overwrite rung's pattern. */
  readonly pattern?: "zero" | "random";
  readonly verify?: VerifyMode;
  /** Only this method, no ladder (a method the device does not offer fails the wipe). */
  readonly only?: WipeMethod;
  readonly chunkBytes?: number;
  /** Uniform numbers in [0, 1) for the sample's offsets (crypto by default). */
  readonly random?: () => number;
}

/** Where a wipe stands. */
export interface WipeProgress {
  readonly method: WipeMethod;
  readonly phase: "erase" | "write" | "verify";
  readonly doneBytes: number;
  readonly totalBytes: number;
}

/** Callbacks and cancel. `afterErase` runs between a rung and its verification (tests corrupt a block there). */
export interface WipeHooks {
  readonly signal?: AbortSignal;
  readonly onProgress?: (p: WipeProgress) => void;
  readonly afterErase?: (method: WipeMethod) => Promise<void>;
}

/** One rung that ran. */
export interface WipeAttempt {
  readonly method: WipeMethod;
  /** `verified`: read back as expected; `failed`: the method itself failed; `mismatch`: it ran, the read-back did not hold. */
  readonly outcome: "verified" | "failed" | "mismatch";
  readonly message?: string;
  /** The first byte offset whose read-back was wrong. */
  readonly mismatchAt?: number;
}

/** The attested record of one disk's wipe. */
export interface WipeOutcome {
  readonly sizeBytes: number;
  /** The rung that held. */
  readonly method: WipeMethod;
  readonly verify: VerifyMode;
  readonly verifiedBytes: number;
  readonly attempts: readonly WipeAttempt[];
}

/** Why a wipe did not finish: `cancelled` or `verify-failed` (every rung failed or read back wrong). */
export class WipeError extends Error {
  constructor(
    readonly reason: "cancelled" | "verify-failed",
    message: string,
    readonly attempts: readonly WipeAttempt[],
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = "WipeError";
  }
}

/** The rungs a wipe tries on a device offering `offered`, in order. */
export function wipeLadder(offered: readonly DeviceMethod[], o: Pick<WipeOptions, "pattern" | "only">): WipeMethod[] {
  if (o.only !== undefined) return [o.only];
  const own = DEVICE_METHODS.filter((m) => offered.includes(m));
  return [...own, o.pattern === "random" ? "overwrite-random" : "overwrite-zero"];
}

/**
 * Wipes `dev` down the ladder and verifies by reading back; returns the attested outcome, or throws
 * {@link WipeError} (`cancelled`, `verify-failed`) with every attempt made.
 */
export async function wipeDisk(dev: WipeDevice, o: WipeOptions = {}, h: WipeHooks = {}): Promise<WipeOutcome> {
  const chunk = o.chunkBytes ?? DEFAULT_CHUNK;
  if (chunk <= 0 || chunk % _BLOCK !== 0) throw new RangeError(`chunk of ${chunk} bytes is not whole 4 KiB blocks`);
  const verify = o.verify ?? "sample";
  const attempts: WipeAttempt[] = [];
  const ladder = wipeLadder(await dev.methods(), o);
  for (const method of ladder) {
    _checkCancel(h, attempts);
    let pattern: Pattern = _ZEROS;
    try {
      if (method === "overwrite-zero" || method === "overwrite-random") {
        pattern = method === "overwrite-random" ? await _keystream() : _ZEROS;
        await _overwrite(dev, method, pattern, chunk, h, attempts);
      } else {
        h.onProgress?.({ method, phase: "erase", doneBytes: 0, totalBytes: dev.sizeBytes });
        await dev.erase(method);
      }
      await dev.flush();
    } catch (e) {
      if (e instanceof WipeError) {
        // Cancelled between chunks: the chunks written reach the device before the refusal goes out, so what the
        // disk holds is what the answer says (those chunks done, none after them), not whatever writeback leaves.
        await dev.flush();
        throw e;
      }
      if (!(e instanceof DeviceMethodFailed)) throw e;
      attempts.push({ method, outcome: "failed", message: e.message });
      continue;
    }
    if (h.afterErase !== undefined) {
      await h.afterErase(method);
      await dev.flush();
    }
    const bad = await _verify(dev, method, pattern, verify, chunk, o.random ?? _cryptoRandom, h, attempts);
    if (bad.mismatchAt === undefined) {
      attempts.push({ method, outcome: "verified" });
      return { sizeBytes: dev.sizeBytes, method, verify, verifiedBytes: bad.checked, attempts };
    }
    attempts.push({
      method,
      outcome: "mismatch",
      mismatchAt: bad.mismatchAt,
      message: `${method}: byte ${bad.mismatchAt} does not read back as ${pattern.name}`,
    });
  }
  const last = attempts.at(-1);
  throw new WipeError(
    "verify-failed",
    `disk.wipe: no method left the disk verified (last: ${last?.message ?? "none ran"})`,
    attempts,
  );
}

/** What a region should read back as. */
interface Pattern {
  readonly name: string;
  bytes(offset: number, length: number): Promise<Uint8Array>;
}

const _ZEROS: Pattern = { name: "zeros", bytes: (_o, n) => Promise.resolve(new Uint8Array(n)) };

async function _keystream(): Promise<Pattern> {
  const key = await crypto.subtle.generateKey({ name: "AES-CTR", length: 128 }, false, ["encrypt"]);
  return {
    name: "the random pass",
    async bytes(offset, length) {
      const counter = new Uint8Array(16);
      new DataView(counter.buffer).setBigUint64(8, BigInt(offset / 16));
      const out = await crypto.subtle.encrypt({ name: "AES-CTR", counter, length: 64 }, key, new Uint8Array(length));
      return new Uint8Array(out);
    },
  };
}

async function _overwrite(
  dev: WipeDevice,
  method: WipeMethod,
  pattern: Pattern,
  chunk: number,
  h: WipeHooks,
  attempts: WipeAttempt[],
): Promise<void> {
  for (let off = 0; off < dev.sizeBytes; off += chunk) {
    _checkCancel(h, attempts);
    const n = Math.min(chunk, dev.sizeBytes - off);
    await dev.write(off, await pattern.bytes(off, n));
    h.onProgress?.({ method, phase: "write", doneBytes: off + n, totalBytes: dev.sizeBytes });
  }
}

async function _verify(
  dev: WipeDevice,
  method: WipeMethod,
  pattern: Pattern,
  mode: VerifyMode,
  chunk: number,
  random: () => number,
  h: WipeHooks,
  attempts: WipeAttempt[],
): Promise<{ checked: number; mismatchAt?: number }> {
  const regions = mode === "all" ? _whole(dev.sizeBytes, chunk) : sampleRegions(dev.sizeBytes, random);
  const total = regions.reduce((n, r) => n + r.length, 0);
  let checked = 0;
  for (const r of regions) {
    _checkCancel(h, attempts);
    const [got, want] = await Promise.all([dev.read(r.offset, r.length), pattern.bytes(r.offset, r.length)]);
    const at = _firstDiff(got, want);
    if (at !== -1) return { checked, mismatchAt: r.offset + at };
    checked += r.length;
    h.onProgress?.({ method, phase: "verify", doneBytes: checked, totalBytes: total });
  }
  return { checked };
}

/** The regions a sampled verification reads: the first and last MiB, and {@link SAMPLE_BLOCKS} random 4 KiB blocks. */
export function sampleRegions(size: number, random: () => number): { offset: number; length: number }[] {
  if (size <= 2 * _MIB) return [{ offset: 0, length: size }];
  const out = [{ offset: 0, length: _MIB }, { offset: size - _MIB, length: _MIB }];
  const blocks = Math.floor(size / _BLOCK);
  const picked = new Set<number>();
  for (let i = 0; i < SAMPLE_BLOCKS; i++) picked.add(Math.min(blocks - 1, Math.floor(random() * blocks)));
  for (const b of [...picked].sort((x, y) => x - y)) out.push({ offset: b * _BLOCK, length: _BLOCK });
  return out;
}

function _whole(size: number, chunk: number): { offset: number; length: number }[] {
  const out = [];
  for (let off = 0; off < size; off += chunk) out.push({ offset: off, length: Math.min(chunk, size - off) });
  return out;
}

function _firstDiff(a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return Math.min(a.length, b.length);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}

function _checkCancel(h: WipeHooks, attempts: readonly WipeAttempt[]): void {
  if (h.signal?.aborted) throw new WipeError("cancelled", "disk.wipe: cancelled", [...attempts]);
}

function _cryptoRandom(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0]! / 2 ** 32;
}
