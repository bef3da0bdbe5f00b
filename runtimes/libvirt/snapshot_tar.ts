/**
 * The snapshot archive: a plain POSIX tar (ustar) of a few named files, written and read as streams so a disk or a
 * memory state of many GiB never sits in memory. The writer hashes every byte it writes (SHA-256), so the digest the
 * upload reports is the digest of the file on disk. Sizes of 8 GiB and more use the base-256 size field (GNU and
 * libarchive read it). mtime, uid and gid are 0, mode 0600: the archive of the same files is the same bytes.
 *
 * The reader is a safety kernel of its own: it takes only regular-file entries whose names it was given (no path, no
 * link, no directory), each once and at most its size bound, checks every header's checksum and magic, and writes each
 * entry to a new file (never over an existing one) in the directory it is given. Anything else is
 * {@link SnapshotArchiveRefused} `bad-snapshot`, and the caller removes what was written.
 *
 * @module
 */

const BLOCK = 512;
/** The largest size the octal size field holds (11 digits). */
const OCTAL_MAX = 8 ** 11 - 1;

/** An archive bcd will not read, with the reason. */
export class SnapshotArchiveRefused extends Error {
  override name = "SnapshotArchiveRefused";
  readonly reason = "bad-snapshot";
}

/** One entry to write: bytes, or a file copied as it is read. */
export type TarInput = { readonly name: string; readonly data: Uint8Array } | {
  readonly name: string;
  readonly path: string;
};

function _octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, "0") + "\0";
}

/** A ustar header for a regular file. */
export function tarHeader(name: string, size: number): Uint8Array {
  const h = new Uint8Array(BLOCK);
  const enc = new TextEncoder();
  const nb = enc.encode(name);
  if (nb.length === 0 || nb.length > 100) {
    throw new RangeError(`tar entry name ${JSON.stringify(name)} is not 1 to 100 bytes`);
  }
  h.set(nb, 0);
  h.set(enc.encode(_octal(0o600, 8)), 100);
  h.set(enc.encode(_octal(0, 8)), 108);
  h.set(enc.encode(_octal(0, 8)), 116);
  if (size <= OCTAL_MAX) h.set(enc.encode(_octal(size, 12)), 124);
  else {
    // base-256: the first byte's high bit set, the size big-endian in the field's last bytes.
    h[124] = 0x80;
    let v = BigInt(size);
    for (let i = 135; i > 124; i--) {
      h[i] = Number(v & 0xffn);
      v >>= 8n;
    }
  }
  h.set(enc.encode(_octal(0, 12)), 136);
  h.fill(0x20, 148, 156);
  h[156] = 0x30; // '0': regular file
  h.set(enc.encode("ustar\0"), 257);
  h.set(enc.encode("00"), 263);
  let sum = 0;
  for (const b of h) sum += b;
  h.set(enc.encode(sum.toString(8).padStart(6, "0") + "\0 "), 148);
  return h;
}

/** The size field of a header (octal or base-256). */
function _size(h: Uint8Array): number {
  if (h[124]! & 0x80) {
    let v = 0n;
    for (let i = 125; i < 136; i++) v = (v << 8n) | BigInt(h[i]!);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new SnapshotArchiveRefused("an entry size is beyond any disk");
    return Number(v);
  }
  const s = new TextDecoder().decode(h.subarray(124, 136)).replace(/[\0 ]+$/, "").trim();
  if (!/^[0-7]{1,11}$/.test(s)) throw new SnapshotArchiveRefused(`an entry size ${JSON.stringify(s)} is not octal`);
  return parseInt(s, 8);
}

/**
 * Writes `entries` as a tar to `dest` (created new, 0600), hashing while writing; returns the archive's size and
 * SHA-256.
 */
export async function writeTar(dest: string, entries: readonly TarInput[]): Promise<{ size: number; sha256: string }> {
  // node:crypto for its incremental hash, loaded here, not at the agent's start (issue 24).
  const { createHash } = await import("node:crypto");
  const hash = createHash("sha256");
  const f = await Deno.open(dest, { write: true, createNew: true, mode: 0o600 });
  let size = 0;
  const put = async (b: Uint8Array) => {
    hash.update(b);
    for (let o = 0; o < b.length;) o += await f.write(b.subarray(o));
    size += b.length;
  };
  try {
    for (const e of entries) {
      if ("data" in e) {
        await put(tarHeader(e.name, e.data.length));
        await put(e.data);
        await put(new Uint8Array((BLOCK - (e.data.length % BLOCK)) % BLOCK));
        continue;
      }
      const src = await Deno.open(e.path, { read: true });
      try {
        const len = (await src.stat()).size;
        await put(tarHeader(e.name, len));
        const buf = new Uint8Array(1024 * 1024);
        let left = len;
        while (left > 0) {
          const n = await src.read(buf.subarray(0, Math.min(buf.length, left)));
          if (n === null) throw new Error(`${e.path} shrank while it was archived`);
          await put(buf.subarray(0, n));
          left -= n;
        }
        await put(new Uint8Array((BLOCK - (len % BLOCK)) % BLOCK));
      } finally {
        src.close();
      }
    }
    await put(new Uint8Array(2 * BLOCK));
    await f.sync();
  } finally {
    f.close();
  }
  return { size, sha256: hash.digest("hex") };
}

/** Reads exactly `buf.length` bytes, or fewer at the end of the file. */
async function _readFull(f: Deno.FsFile, buf: Uint8Array): Promise<number> {
  let off = 0;
  while (off < buf.length) {
    const n = await f.read(buf.subarray(off));
    if (n === null) break;
    off += n;
  }
  return off;
}

/**
 * Unpacks the tar at `src` into `dir`: only the names of `allowed` (each with its size bound), each at most once.
 * Returns the names written with their sizes.
 */
export async function readTar(
  src: string,
  dir: string,
  allowed: ReadonlyMap<string, number>,
): Promise<Map<string, number>> {
  const got = new Map<string, number>();
  const f = await Deno.open(src, { read: true });
  try {
    const total = (await f.stat()).size;
    let at = 0;
    const h = new Uint8Array(BLOCK);
    while (true) {
      if (await _readFull(f, h) < BLOCK) throw new SnapshotArchiveRefused("the archive ends inside a header");
      at += BLOCK;
      if (h.every((b) => b === 0)) break;
      let sum = 0;
      for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : h[i]!;
      const want = parseInt(new TextDecoder().decode(h.subarray(148, 156)).replace(/[\0 ]+$/, "").trim(), 8);
      if (want !== sum) throw new SnapshotArchiveRefused(`a header at byte ${at - BLOCK} has a bad checksum`);
      if (new TextDecoder().decode(h.subarray(257, 262)) !== "ustar") {
        throw new SnapshotArchiveRefused(`a header at byte ${at - BLOCK} is not ustar`);
      }
      const nameEnd = h.subarray(0, 100).indexOf(0);
      const name = new TextDecoder().decode(h.subarray(0, nameEnd < 0 ? 100 : nameEnd));
      const prefix = h[345] === 0 ? "" : "prefixed";
      const type = h[156];
      if (type !== 0x30 && type !== 0) {
        throw new SnapshotArchiveRefused(`entry ${JSON.stringify(name)} is not a regular file (type ${type})`);
      }
      const bound = allowed.get(name);
      if (prefix !== "" || bound === undefined) {
        throw new SnapshotArchiveRefused(`entry ${JSON.stringify(name)} is not one a snapshot holds`);
      }
      if (got.has(name)) throw new SnapshotArchiveRefused(`entry ${JSON.stringify(name)} appears twice`);
      const size = _size(h);
      if (size > bound) throw new SnapshotArchiveRefused(`entry ${name} is ${size} bytes, more than its ${bound}`);
      if (at + size > total) throw new SnapshotArchiveRefused(`entry ${name} runs past the archive's end`);
      const out = await Deno.open(`${dir}/${name}`, { write: true, createNew: true, mode: 0o600 });
      try {
        const buf = new Uint8Array(1024 * 1024);
        let left = size;
        while (left > 0) {
          const n = await f.read(buf.subarray(0, Math.min(buf.length, left)));
          if (n === null) throw new SnapshotArchiveRefused(`entry ${name} is cut short`);
          for (let o = 0; o < n;) o += await out.write(buf.subarray(o, n));
          left -= n;
        }
        await out.sync();
      } finally {
        out.close();
      }
      const pad = (BLOCK - (size % BLOCK)) % BLOCK;
      if (pad > 0 && await _readFull(f, new Uint8Array(pad)) < pad) {
        throw new SnapshotArchiveRefused(`entry ${name} is cut short`);
      }
      at += size + pad;
      got.set(name, size);
    }
  } finally {
    f.close();
  }
  return got;
}
