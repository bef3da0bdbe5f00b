/**
 * Test-only fuzzing of the two safety kernels over the real corpus (qemu-img images, GNU tar bundles): seeded
 * mutations (bit flips, byte sets, truncations, field splices, chunk duplication and deletion), each verdict held to
 * "accepted, or refused with a named reason". A thrown error of any other kind is a crash; an iteration slower
 * than {@link HANG_MS} is a hang. Used by the bounded `test:fuzz` run and by `deno task fuzz:*` on demand.
 *
 * @module
 */
import { gunzipSync } from "node:zlib";
import { join } from "node:path";
import { makeCorpus } from "./_qemu_img.ts";
import { gz, paxRecord, tgzOf } from "./_tar_gen.ts";
import { type Check, unpack, walk } from "./bundle_walk.ts";
import { type ImageReason, ImageRefused, UnsafeBundle, type UnsafeReason } from "./errors.ts";
import { checkOverlayHeader, type ExpectedBacking } from "./overlay.ts";
import { checkQcow2Header, parseQcow2Header, readQcow2Prefix } from "./qcow2_header.ts";
import { Tree } from "./tree.ts";

/** An iteration slower than this is reported as a hang. */
export const HANG_MS = 10_000;

const IMAGE_REASONS = new Set<ImageReason>([
  "malformed",
  "backing-file",
  "data-file",
  "unknown-feature",
  "encrypted",
  "backing-mismatch",
]);
const BUNDLE_REASONS = new Set<UnsafeReason>([
  "wire-too-large",
  "not-gzip",
  "bad-gzip",
  "stream-too-large",
  "too-many-files",
  "too-large",
  "truncated",
  "bad-checksum",
  "bad-header",
  "bad-name",
  "absolute",
  "drive",
  "backslash",
  "traversal",
  "duplicate",
  "conflict",
  "symlink",
  "hardlink",
  "device",
  "fifo",
  "sparse",
  "unsupported-type",
]);

/** A small seeded PRNG (xorshift32), so every failure names a seed that reproduces it. */
export class Rng {
  #s: number;
  constructor(seed: number) {
    this.#s = (seed >>> 0) || 0x9e3779b9;
  }
  u32(): number {
    let x = this.#s;
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#s = x >>> 0;
    return this.#s;
  }
  below(n: number): number {
    return n <= 0 ? 0 : this.u32() % n;
  }
}

const _INTERESTING = [
  0,
  1,
  2,
  3,
  4,
  7,
  8,
  9,
  16,
  21,
  22,
  64,
  72,
  100,
  103,
  104,
  105,
  112,
  127,
  128,
  255,
  256,
  511,
  512,
  1023,
  1024,
  4096,
  65535,
  65536,
  0x7fffffff,
  0x80000000,
  0xffffffff,
];

/** qcow2 header fields (offset, width) that field splices aim at. */
const _QCOW2_FIELDS: Array<[number, number]> = [
  [0, 4],
  [4, 4],
  [8, 8],
  [16, 4],
  [20, 4],
  [24, 8],
  [32, 4],
  [36, 4],
  [40, 8],
  [48, 8],
  [56, 4],
  [60, 4],
  [64, 8],
  [72, 8],
  [80, 8],
  [88, 8],
  [96, 4],
  [100, 4],
  [104, 1],
  [112, 4],
  [116, 4],
];
/** tar header fields (offset, width) within a 512-byte block. */
const _TAR_FIELDS: Array<[number, number]> = [[0, 100], [100, 8], [124, 12], [148, 8], [156, 1], [157, 100], [257, 8], [
  345,
  155,
]];

/** One mutation of `input`; `fields` are the format's header fields, `block` their period (512 for tar). */
export function mutate(rng: Rng, input: Uint8Array, fields: Array<[number, number]>, block = 0): Uint8Array {
  let b = input.slice();
  const rounds = 1 + rng.below(4);
  for (let r = 0; r < rounds; r++) {
    const focus = Math.min(b.length, rng.below(2) === 0 ? 1024 : b.length);
    switch (rng.below(7)) {
      case 0: { // bit flip
        if (b.length === 0) break;
        const i = rng.below(focus);
        b[i] = b[i]! ^ (1 << rng.below(8));
        break;
      }
      case 1: { // byte set
        if (b.length === 0) break;
        b[rng.below(focus)] = _INTERESTING[rng.below(_INTERESTING.length)]! & 0xff;
        break;
      }
      case 2: // truncation
        b = b.slice(0, rng.below(b.length + 1));
        break;
      case 3: { // field splice: an interesting value into a header field, big-endian or as octal text
        const [off0, width] = fields[rng.below(fields.length)]!;
        const base = block > 0 ? block * rng.below(Math.max(1, Math.floor(b.length / block))) : 0;
        const off = base + off0;
        if (off + width > b.length) break;
        const v = _INTERESTING[rng.below(_INTERESTING.length)]!;
        if (block > 0 && rng.below(2) === 0) {
          const text = new TextEncoder().encode(v.toString(8).padStart(width - 1, "0").slice(-width));
          b.set(text.subarray(0, width), off);
        } else {
          for (let k = 0; k < width; k++) b[off + width - 1 - k] = k < 4 ? (v >>> (8 * k)) & 0xff : 0;
          if (width === 8 && rng.below(4) === 0) b[off] = 0x80 | rng.below(128);
        }
        break;
      }
      case 4: { // chunk duplication
        if (b.length === 0) break;
        const s = rng.below(b.length);
        const n = Math.min(b.length - s, 1 + rng.below(1024));
        const out = new Uint8Array(b.length + n);
        out.set(b.subarray(0, s + n));
        out.set(b.subarray(s), s + n);
        b = out;
        break;
      }
      case 5: { // chunk deletion
        if (b.length === 0) break;
        const s = rng.below(b.length);
        const n = Math.min(b.length - s, 1 + rng.below(1024));
        const out = new Uint8Array(b.length - n);
        out.set(b.subarray(0, s));
        out.set(b.subarray(s + n), s);
        b = out;
        break;
      }
      case 6: { // splice a block from elsewhere in the input
        if (b.length < 16) break;
        const from = rng.below(b.length - 8);
        const to = rng.below(b.length - 8);
        const n = Math.min(8 + rng.below(block || 64), b.length - Math.max(from, to));
        b.copyWithin(to, from, from + n);
        break;
      }
    }
  }
  return b;
}

/** Recomputes the checksum of every block that carries a ustar magic, so mutations reach past the checksum. */
function _fixChecksums(tar: Uint8Array): Uint8Array {
  for (let off = 0; off + 512 <= tar.length; off += 512) {
    if (tar[off + 257] !== 0x75 || tar[off + 258] !== 0x73 || tar[off + 259] !== 0x74) continue;
    tar.fill(0x20, off + 148, off + 156);
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += tar[off + i]!;
    tar.set(new TextEncoder().encode(sum.toString(8).padStart(6, "0") + "\0 "), off + 148);
  }
  return tar;
}

/** A finding: the input that crashed or hung, with what happened. */
export class FuzzFinding extends Error {
  override name = "FuzzFinding";
  constructor(message: string, readonly input: Uint8Array, options?: ErrorOptions) {
    super(message, options);
  }
}

/** Tallies of a campaign: verdict → count. */
export type Tally = Record<string, number>;

function _count(t: Tally, k: string): void {
  t[k] = (t[k] ?? 0) + 1;
}

/**
 * Runs `iterations` mutations of qcow2 prefixes through the base-image check and the overlay check. Every verdict
 * must be acceptance or an {@link ImageRefused} with a named reason.
 */
export function fuzzImages(corpus: Uint8Array[], iterations: number, seed: number, tally: Tally = {}): Tally {
  const rng = new Rng(seed);
  // Each overlay check expects what the unmutated corpus image names (its base, or none), so mutations that leave
  // the backing alone are accepted and the ones that touch it are caught.
  const expected = corpus.map((c): ExpectedBacking | null => {
    try {
      const h = parseQcow2Header(c);
      return h.backingFile !== null && (h.backingFormat === "qcow2" || h.backingFormat === "raw")
        ? { path: h.backingFile, format: h.backingFormat }
        : null;
    } catch (e) {
      if (e instanceof ImageRefused) return null;
      throw e;
    }
  });
  for (let i = 0; i < iterations; i++) {
    const k = rng.below(corpus.length);
    const input = mutate(rng, corpus[k]!, _QCOW2_FIELDS);
    const t0 = performance.now();
    for (const policy of ["base", "overlay"] as const) {
      try {
        const h = parseQcow2Header(input);
        if (policy === "base") checkQcow2Header(h);
        else checkOverlayHeader(h, expected[k] ?? null);
        _count(tally, `${policy}:accepted`);
      } catch (e) {
        if (e instanceof ImageRefused && IMAGE_REASONS.has(e.reason)) _count(tally, `${policy}:${e.reason}`);
        else throw new FuzzFinding(`seed ${seed} iteration ${i}: crash ${e}`, input, { cause: e });
      }
    }
    if (performance.now() - t0 > HANG_MS) throw new FuzzFinding(`seed ${seed} iteration ${i}: hang`, input);
  }
  return tally;
}

async function _timed<T>(p: Promise<T>, what: string, input: Uint8Array): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FuzzFinding(`${what}: hang`, input)), HANG_MS);
  });
  try {
    return await Promise.race([p, hang]);
  } finally {
    clearTimeout(timer);
  }
}

/** A Check that records the names it is shown, to hold every clean name to the containment rules. */
function _namesCheck(names: string[]): Check {
  return { member: (clean) => void names.push(clean) };
}

/**
 * Runs `iterations` mutations of bundles through {@link walk} (and every `unpackEvery`-th through {@link unpack}
 * into a fresh directory below `sandbox`): half mutate the tar and recompress it, so the tar parser sees them past
 * the gzip CRC, half mutate the gzip stream itself. Every verdict must be acceptance or an {@link UnsafeBundle} with
 * a named reason, and every accepted clean name must be relative without `..`.
 */
export async function fuzzBundles(
  corpus: Uint8Array[],
  iterations: number,
  seed: number,
  opts: { sandbox?: string; unpackEvery?: number; tree?: Tree; treeEvery?: number; tally?: Tally } = {},
): Promise<Tally> {
  const tally = opts.tally ?? {};
  const rng = new Rng(seed);
  const tars = corpus.map((c) => new Uint8Array(gunzipSync(c)));
  for (let i = 0; i < iterations; i++) {
    const k = rng.below(corpus.length);
    const mode = rng.below(3);
    const input = mode === 0 ? mutate(rng, corpus[k]!, [[0, 2], [2, 1], [3, 1], [4, 4]]) : gz(
      mode === 1 ? mutate(rng, tars[k]!, _TAR_FIELDS, 512) : _fixChecksums(mutate(rng, tars[k]!, _TAR_FIELDS, 512)),
    );
    const what = `seed ${seed} iteration ${i}`;
    const names: string[] = [];
    try {
      await _timed(walk(input, _namesCheck(names)), what, input);
      for (const n of names) {
        if (n.startsWith("/") || n.split("/").includes("..") || n.includes("\\")) {
          throw new FuzzFinding(`${what}: accepted an escaping name ${JSON.stringify(n)}`, input);
        }
      }
      _count(tally, "accepted");
    } catch (e) {
      if (e instanceof UnsafeBundle && BUNDLE_REASONS.has(e.reason)) _count(tally, e.reason);
      else if (e instanceof FuzzFinding) throw e;
      else throw new FuzzFinding(`${what}: crash ${e}`, input, { cause: e });
    }
    if (opts.sandbox && opts.unpackEvery && i % opts.unpackEvery === 0) {
      const dest = `${opts.sandbox}/u${i}`;
      await Deno.mkdir(dest);
      try {
        await _timed(unpack(input, dest), what, input);
      } catch (e) {
        if (!(e instanceof UnsafeBundle)) throw new FuzzFinding(`${what}: unpack crash ${e}`, input, { cause: e });
        if ([...Deno.readDirSync(dest)].length !== 0) throw new FuzzFinding(`${what}: refusal left files`, input);
      }
      await Deno.remove(dest, { recursive: true });
    }
    if (opts.tree && opts.treeEvery && i % opts.treeEvery === 0) {
      _count(tally, `tree:${await _treeRound(opts.tree, `v${i}`, input, what)}`);
    }
  }
  return tally;
}

/** One install into a live tree: accepted flips `current` to it; refused leaves `current` and the root as they were. */
async function _treeRound(
  tree: Tree,
  version: string,
  input: Uint8Array,
  what: string,
): Promise<"accepted" | "refused"> {
  const before = await tree.currentVersion();
  const list = () => [...Deno.readDirSync(tree.root)].map((e) => e.name).sort().join(",");
  const listing = list();
  let accepted = true;
  try {
    await _timed(tree.install(version, input), what, input);
  } catch (e) {
    if (!(e instanceof UnsafeBundle)) throw new FuzzFinding(`${what}: install crash ${e}`, input, { cause: e });
    accepted = false;
  }
  const after = await tree.currentVersion();
  if (accepted) {
    if (after !== version || list() !== ["current", version].sort().join(",")) {
      throw new FuzzFinding(`${what}: accepted install left ${list()} with current ${after}`, input);
    }
  } else if (after !== before || list() !== listing) {
    throw new FuzzFinding(`${what}: refused install changed the root (${listing} → ${list()})`, input);
  }
  return accepted ? "accepted" : "refused";
}

/**
 * The image corpus: the first cluster of every qemu-img image of {@link makeCorpus}, made in `dir`, cut to 64 KiB
 * (the 2 MiB cluster's prefix would only slow each copy; everything a header names lies in its first bytes).
 */
export async function imageCorpus(dir: string): Promise<Uint8Array[]> {
  const c = await makeCorpus(dir);
  return (await Promise.all(Object.values(c).map((p) => readQcow2Prefix(p)))).map((b) => b.slice(0, 65536));
}

/** The bundle corpus: GNU tar bundles in gnu, pax and ustar formats (made in `dir`) and generator bundles. */
export async function bundleCorpus(dir: string): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  const sh = async (script: string) => {
    const r = await new Deno.Command("sh", { args: ["-ec", script], cwd: dir, stderr: "piped" }).output();
    if (!r.success) throw new Error(`sh: ${script}: ${new TextDecoder().decode(r.stderr)}`);
  };
  await sh(`mkdir -p src/etc/app/conf.d src/${"d".repeat(60)}/${"e".repeat(60)} && echo 'a = 1' > src/etc/app/app.toml
    echo '{}' > src/etc/app/conf.d/x.json && head -c 3000 /dev/urandom > src/etc/app/blob
    echo deep > src/${"d".repeat(60)}/${"e".repeat(60)}/${"f".repeat(60)}`);
  for (const format of ["gnu", "pax", "ustar"]) {
    await sh(`tar --format=${format} -czf ${format}.tgz -C src .`);
    out.push(await Deno.readFile(join(dir, `${format}.tgz`)));
  }
  out.push(tgzOf([
    { name: "a/" },
    { name: "PaxHeaders/x", type: "x", content: paxRecord("path", "a/" + "p".repeat(120)) },
    { name: "a/ppp", content: "pax" },
    { name: "././@LongLink", type: "L", content: "a/" + "g".repeat(120) + "\0" },
    { name: "a/ggg", content: "gnu" },
    { name: "l", type: "2", linkname: "a" },
  ]));
  return out;
}

/** A Tree symlink maker that runs `ln -s`, for runs whose writes are path-scoped. */
export async function lnSymlink(target: string, path: string): Promise<void> {
  const out = await new Deno.Command("ln", { args: ["-s", "--", target, path], stderr: "piped" }).output();
  if (!out.success) throw new Error(`ln -s ${target} ${path}: ${new TextDecoder().decode(out.stderr)}`);
}
