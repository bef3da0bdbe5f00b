/**
 * The bundle safety kernel (seed 004 T1): {@link walk} checks a gzip-compressed tar without writing anything and
 * {@link unpack} writes it below a directory, both under the same caps, name rules and member types, with a caller's
 * {@link Check} run on every member. Safety failures are {@link UnsafeBundle}; a Check's own errors pass through
 * unchanged.
 *
 * @module
 */
import { join } from "../util/path.ts";
import { cleanName } from "./bundle_name.ts";
import { UnsafeBundle } from "./errors.ts";
import { GunzipReader } from "./gzip_source.ts";
import { BLOCK, decodeHeader, decodeName, isZeroBlock, parsePax } from "./tar_header.ts";

/** Most members a bundle may hold; every member counts (directories too). */
export const MAX_FILES = 10_000;
/** Most bytes of file content (the sum of regular members' sizes); exactly this much is accepted. */
export const MAX_BYTES = 64 * 1024 * 1024;
/** Coarse ceiling on the compressed bytes (seed 004: "the decompressed cap is the wrong bound for compressed bytes"). */
export const MAX_WIRE_BYTES = 2 * MAX_BYTES;
/** Largest PAX or GNU long-name extension a member may carry. */
export const MAX_EXTENSION_BYTES = 64 * 1024;
/**
 * Ceiling on the decompressed tar stream: the content cap plus 4 KiB of headers, extensions and padding per member
 * plus 1 MiB of end-of-archive blocks and record padding. A bundle within the other caps always fits.
 */
export const MAX_TAR_BYTES = MAX_BYTES + MAX_FILES * 4096 + 1024 * 1024;

/** Mode every directory of an unpacked bundle gets. */
export const DIR_MODE = 0o755;
/** Mode every regular file of an unpacked bundle gets. */
export const FILE_MODE = 0o644;

/** Member type flags a {@link Check} sees: `"0"` a regular file, `"5"` a directory. */
export type MemberType = "0" | "5";

/**
 * A caller's content rules, run after the safety rules (seed 004 `agentconfig.Check`): `member` before a member's
 * bytes are read, `content` after a regular file's bytes are read. Both are optional; a zero Check runs the safety
 * kernel alone. Whatever they throw passes through unchanged.
 */
export interface Check {
  member?(clean: string, typeflag: MemberType): void | Promise<void>;
  content?(clean: string, content: Uint8Array): void | Promise<void>;
}

/** Where accepted members go: nowhere for {@link walk}, a directory for {@link unpack}. */
interface _Sink {
  dir(clean: string): Promise<void> | void;
  file(clean: string, content: Uint8Array): Promise<void> | void;
}

const _REFUSED_TYPES: Record<string, [UnsafeBundle["reason"], string]> = {
  "1": ["hardlink", "a hard link"],
  "2": ["symlink", "a symbolic link"],
  "3": ["device", "a character device"],
  "4": ["device", "a block device"],
  "6": ["fifo", "a FIFO"],
  "S": ["sparse", "a GNU sparse file"],
  "7": ["unsupported-type", "a contiguous file"],
  "g": ["unsupported-type", "a global PAX header"],
  "K": ["unsupported-type", "a GNU long link name"],
  "V": ["unsupported-type", "a volume label"],
  "M": ["unsupported-type", "a multi-volume continuation"],
  "D": ["unsupported-type", "a GNU dump directory"],
  "N": ["unsupported-type", "an old GNU long name"],
};

/** What an accepted bundle holds. */
export interface BundleSummary {
  /** Members, directories included. */
  members: number;
  /** Bytes of regular-file content. */
  bytes: number;
}

/**
 * The caps of one walk: seed 004's by default ({@link MAX_FILES}, {@link MAX_BYTES}); an agent release (the self-update's
 * artifact, which carries the Deno runtime) passes larger ones. The compressed and decompressed ceilings follow from
 * them as for the defaults.
 */
export interface BundleLimits {
  readonly maxFiles: number;
  readonly maxBytes: number;
}

/** Seed 004's caps. */
export const BUNDLE_LIMITS: BundleLimits = { maxFiles: MAX_FILES, maxBytes: MAX_BYTES };

async function _scan(
  tarball: Uint8Array,
  check: Check,
  sink: _Sink,
  limits: BundleLimits = BUNDLE_LIMITS,
): Promise<BundleSummary> {
  const MAX_FILES = limits.maxFiles;
  const MAX_BYTES = limits.maxBytes;
  const MAX_WIRE_BYTES = 2 * MAX_BYTES;
  const MAX_TAR_BYTES = MAX_BYTES + MAX_FILES * 4096 + 1024 * 1024;
  if (tarball.length > MAX_WIRE_BYTES) {
    throw new UnsafeBundle("wire-too-large", `${tarball.length} compressed bytes exceed ${MAX_WIRE_BYTES}`);
  }
  const r = new GunzipReader(tarball, MAX_TAR_BYTES);
  try {
    let members = 0;
    let bytes = 0;
    const seen = new Map<string, MemberType>();
    const implied = new Set<string>();
    let paxPath: string | undefined;
    let paxSize: number | undefined;
    let longName: Uint8Array | undefined;
    let paxSeen = false;
    for (;;) {
      const block = await r.read(BLOCK);
      if (block === null) throw new UnsafeBundle("truncated", "the tar ends without its end-of-archive marker");
      if (isZeroBlock(block)) {
        if (paxSeen || longName !== undefined) {
          throw new UnsafeBundle("bad-header", "an extension header is followed by the end of the archive");
        }
        const second = await r.read(BLOCK);
        if (second === null) throw new UnsafeBundle("truncated", "the end-of-archive marker is one block short");
        if (!isZeroBlock(second)) throw new UnsafeBundle("bad-header", "a lone zero block inside the archive");
        await r.drainZeros();
        return { members, bytes };
      }
      const h = decodeHeader(block);
      if (h.size < 0) throw new UnsafeBundle("too-large", "a member size past 2^53");
      if (h.typeflag === "x" || h.typeflag === "L") {
        if (h.size > MAX_EXTENSION_BYTES) {
          throw new UnsafeBundle("bad-header", `an extension header of ${h.size} bytes (most ${MAX_EXTENSION_BYTES})`);
        }
        if ((h.typeflag === "x" && paxSeen) || (h.typeflag === "L" && longName !== undefined)) {
          throw new UnsafeBundle("bad-header", `two "${h.typeflag}" extension headers for one member`);
        }
        const data = await r.read(h.size);
        if (data === null) throw new UnsafeBundle("truncated", "the tar ends inside an extension header");
        await r.skip((BLOCK - (h.size % BLOCK)) % BLOCK);
        if (h.typeflag === "L") {
          const z = data.indexOf(0);
          longName = data.slice(0, z < 0 ? data.length : z);
          continue;
        }
        paxSeen = true;
        for (const [k, v] of parsePax(data)) {
          if (k.startsWith("GNU.sparse.")) throw new UnsafeBundle("sparse", "a PAX sparse file");
          if (k === "path") paxPath = v;
          else if (k === "size") {
            if (!/^[0-9]{1,16}$/.test(v)) throw new UnsafeBundle("bad-header", `PAX size ${JSON.stringify(v)}`);
            paxSize = Number(v);
          }
        }
        continue;
      }
      members++;
      if (members > MAX_FILES) throw new UnsafeBundle("too-many-files", `more than ${MAX_FILES} members`);
      let raw: string;
      if (paxPath !== undefined) raw = paxPath;
      else if (longName !== undefined) raw = decodeName(longName);
      else if (h.prefix.length > 0) raw = decodeName(h.prefix) + "/" + decodeName(h.name);
      else raw = decodeName(h.name);
      const size = paxSize ?? h.size;
      paxPath = paxSize = longName = undefined;
      paxSeen = false;
      const refused = _REFUSED_TYPES[h.typeflag];
      if (refused) throw new UnsafeBundle(refused[0], `member ${JSON.stringify(raw)} is ${refused[1]}`);
      if (h.typeflag !== "0" && h.typeflag !== "5") {
        throw new UnsafeBundle(
          "unsupported-type",
          `member ${JSON.stringify(raw)} has type ${JSON.stringify(h.typeflag)}`,
        );
      }
      const type: MemberType = h.typeflag;
      const clean = cleanName(raw);
      if (seen.has(clean)) throw new UnsafeBundle("duplicate", `member ${JSON.stringify(clean)} appears twice`);
      if (clean !== ".") {
        for (let i = clean.indexOf("/"); i >= 0; i = clean.indexOf("/", i + 1)) {
          const a = clean.slice(0, i);
          if (seen.get(a) === "0") {
            throw new UnsafeBundle(
              "conflict",
              `member ${JSON.stringify(clean)} lies below the file ${JSON.stringify(a)}`,
            );
          }
          implied.add(a);
        }
        if (type === "0" && implied.has(clean)) {
          throw new UnsafeBundle("conflict", `file ${JSON.stringify(clean)} is also a directory`);
        }
      }
      seen.set(clean, type);
      if (type === "5") {
        if (size !== 0) throw new UnsafeBundle("bad-header", `directory ${JSON.stringify(clean)} has a size`);
        if (check.member) await check.member(clean, type);
        await sink.dir(clean);
        continue;
      }
      if (size > MAX_BYTES - bytes) {
        throw new UnsafeBundle("too-large", `file content past ${MAX_BYTES} bytes at ${JSON.stringify(clean)}`);
      }
      bytes += size;
      if (clean === ".") throw new UnsafeBundle("conflict", "a regular file names the archive root");
      if (check.member) await check.member(clean, type);
      const content = await r.read(size);
      if (content === null) throw new UnsafeBundle("truncated", `the tar ends before ${JSON.stringify(clean)}'s data`);
      await r.skip((BLOCK - (size % BLOCK)) % BLOCK);
      if (check.content) await check.content(clean, content);
      await sink.file(clean, content);
    }
  } catch (e) {
    await r.cancel();
    throw e;
  }
}

/**
 * Checks `tarball` (gzip-compressed tar, at most {@link MAX_WIRE_BYTES}) against the safety kernel and `check`,
 * writing nothing, and returns what it holds. Throws {@link UnsafeBundle} with a reason, or whatever `check` throws.
 */
export function walk(tarball: Uint8Array, check: Check = {}): Promise<BundleSummary> {
  return _scan(tarball, check, { dir() {}, file() {} });
}

/**
 * Unpacks `tarball` into `destDir`, an existing empty directory (not a symlink): directories 0755, regular files
 * 0644 created exclusively, ownership ignored. On any refusal or error `destDir` is emptied again before the error
 * is thrown, so it holds either the whole bundle or nothing.
 */
export async function unpack(
  tarball: Uint8Array,
  destDir: string,
  check: Check = {},
  limits: BundleLimits = BUNDLE_LIMITS,
): Promise<void> {
  const st = await Deno.lstat(destDir);
  if (!st.isDirectory) throw new TypeError(`unpack: ${destDir} is not a directory`);
  for await (const _ of Deno.readDir(destDir)) throw new TypeError(`unpack: ${destDir} is not empty`);
  const made = new Set<string>();
  const mkdirs = async (clean: string) => {
    if (clean === "." || made.has(clean)) return;
    const slash = clean.lastIndexOf("/");
    if (slash > 0) await mkdirs(clean.slice(0, slash));
    const p = join(destDir, clean);
    await Deno.mkdir(p, { mode: DIR_MODE });
    await Deno.chmod(p, DIR_MODE);
    made.add(clean);
  };
  try {
    await _scan(tarball, check, {
      dir: mkdirs,
      async file(clean, content) {
        const slash = clean.lastIndexOf("/");
        if (slash > 0) await mkdirs(clean.slice(0, slash));
        const p = join(destDir, clean);
        await Deno.writeFile(p, content, { createNew: true, mode: FILE_MODE });
        await Deno.chmod(p, FILE_MODE);
      },
    }, limits);
  } catch (e) {
    for await (const ent of Deno.readDir(destDir)) await Deno.remove(join(destDir, ent.name), { recursive: true });
    throw e;
  }
}
