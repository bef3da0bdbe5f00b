/**
 * The probes of the layers beneath a Linux overlay (seed 002 §Probes): copy-up FILE, rename DIRECTORY, and fill.
 * Each takes the merged root, the overlay's upper directory, and its lower layers, topmost first.
 *
 * - copy-up sets FILE's mode to the mode that it has, which copies it up, and compares: `upper.data` is `copied`
 *   when the upper's copy holds the layer's bytes, `none` when it holds no data (a metadata-only copy-up, whose
 *   upper file reads as zeros, sparse), `different` otherwise; `root.data` is `intact` when the root still shows
 *   the layer's bytes.
 * - rename renames DIRECTORY to .runtime-adapter-renamed at the top of the root, and back: `allowed`, `refused`
 *   (EXDEV: the overlay will not redirect a lower directory), or `failed: PROBLEM` (also when it could not rename
 *   it back).
 * - fill writes a file through the root until the upper is full, removes it, and writes another.
 *
 * @module
 */
import { join } from "../core/util/path.ts";
import type { Facts } from "../core/framing/mod.ts";
import { ProbeProblem } from "./root_errors.ts";
import { memTotal } from "./linux_probes.ts";

/** The overlay's directories. */
export interface Layers {
  readonly root: string;
  readonly upper: string;
  /** Topmost first, as in lowerdir=. */
  readonly lowers: readonly string[];
}

const CHUNK = 64 * 1024;
const message = (e: unknown) => e instanceof Error ? e.message : String(e);

async function lstatOrNull(p: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.lstat(p);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

/** Reads a file chunk by chunk, calling `each` with a view of each chunk. */
async function chunks(path: string, each: (chunk: Uint8Array, offset: number) => boolean): Promise<boolean> {
  using f = await Deno.open(path, { read: true });
  const buf = new Uint8Array(CHUNK);
  let offset = 0;
  for (;;) {
    let n = 0;
    while (n < CHUNK) {
      const got = await f.read(buf.subarray(n));
      if (got === null) break;
      n += got;
    }
    if (n > 0 && !each(buf.subarray(0, n), offset)) return false;
    offset += n;
    if (n < CHUNK) return true;
  }
}

/** Whether two files hold the same bytes (compared chunk by chunk, never whole in memory). */
export async function sameBytes(a: string, b: string): Promise<boolean> {
  const [sa, sb] = await Promise.all([Deno.stat(a), Deno.stat(b)]);
  if (sa.size !== sb.size) return false;
  using fb = await Deno.open(b, { read: true });
  const other = new Uint8Array(CHUNK);
  return await chunks(a, (chunk) => {
    let n = 0;
    while (n < chunk.length) {
      const got = fb.readSync(other.subarray(n, chunk.length));
      if (got === null) return false;
      n += got;
    }
    for (let i = 0; i < chunk.length; i++) if (chunk[i] !== other[i]) return false;
    return true;
  });
}

async function allZero(path: string): Promise<boolean> {
  return await chunks(path, (chunk) => chunk.every((b) => b === 0));
}

/** The topmost layer's path of `rel`, and what it is there. */
async function inLayers(l: Layers, rel: string): Promise<{ path: string; info: Deno.FileInfo } | null> {
  for (const layer of l.lowers) {
    const path = join(layer, rel);
    const info = await lstatOrNull(path);
    if (info !== null) return { path, info };
  }
  return null;
}

/** `copy-up FILE`. */
export async function probeCopyUp(l: Layers, file: string): Promise<Facts> {
  const lower = await inLayers(l, file);
  if (lower === null || !lower.info.isFile) throw new ProbeProblem(`FILE ${file} is no regular file of the layers`);
  const merged = join(l.root, file);
  const st = await Deno.lstat(merged);
  if (!st.isFile) throw new ProbeProblem(`FILE ${file} is no regular file in the root`);
  await Deno.chmod(merged, (st.mode ?? 0o644) & 0o7777);
  const facts: [string, string][] = [["lower.size", String(lower.info.size)]];
  const upperPath = join(l.upper, file);
  const upper = await lstatOrNull(upperPath);
  if (upper !== null) {
    facts.push(["upper.size", String(upper.size)]);
    const data = (await sameBytes(upperPath, lower.path))
      ? "copied"
      : (await allZero(upperPath))
      ? "none"
      : "different";
    facts.push(["upper.data", data]);
  }
  facts.push(["root.data", (await sameBytes(merged, lower.path)) ? "intact" : "different"]);
  return facts;
}

/** The name at the top of the root that rename renames to. */
export const RENAMED = ".runtime-adapter-renamed";

/** `rename DIRECTORY`. */
export async function probeRename(l: Layers, directory: string): Promise<Facts> {
  const lower = await inLayers(l, directory);
  if (lower === null || !lower.info.isDirectory) {
    throw new ProbeProblem(`DIRECTORY ${directory} is no directory of the layers`);
  }
  const from = join(l.root, directory);
  const to = join(l.root, RENAMED);
  try {
    await Deno.rename(from, to);
  } catch (e) {
    const code = (e as { code?: string }).code;
    return [["outcome", code === "EXDEV" ? "refused" : `failed: ${message(e)}`]];
  }
  try {
    await Deno.rename(to, from);
  } catch (e) {
    return [["outcome", `failed: renamed, but not back: ${message(e)}`]];
  }
  return [["outcome", "allowed"]];
}

/** The size and the available bytes of the file system at `path` (`stat -f`). */
export async function statfs(path: string): Promise<{ total: bigint; available: bigint }> {
  const out = await new Deno.Command("stat", { args: ["-f", "-c", "%S %b %a", path], stdout: "piped", stderr: "piped" })
    .output();
  const text = new TextDecoder().decode(out.success ? out.stdout : out.stderr).trim();
  const m = /^(\d+) (\d+) (\d+)$/.exec(text);
  if (!out.success || m === null) throw new ProbeProblem(`stat -f ${path}: ${text}`);
  const size = BigInt(m[1]!);
  return { total: size * BigInt(m[2]!), available: size * BigInt(m[3]!) };
}

/** The files fill writes at the top of the root, and what the second holds. */
export const FILL_NAME = ".runtime-adapter-fill";
export const FILL_AFTER = "runtime-adapter-fill";

/** `fill`: total, available, written, error, after, memory. */
export async function probeFill(l: Layers, meminfo = "/proc/meminfo"): Promise<Facts> {
  const { total, available } = await statfs(l.upper);
  const path = join(l.root, FILL_NAME);
  const block = new Uint8Array(1024 * 1024).fill(0x5a);
  let written = 0n;
  let error = "none";
  {
    using f = await Deno.open(path, { write: true, create: true, truncate: true });
    for (;;) {
      if (written > total + BigInt(block.length)) {
        error = `the upper took ${written} bytes, beyond its size`;
        break;
      }
      try {
        written += BigInt(await f.write(block));
      } catch (e) {
        const code = (e as { code?: string }).code;
        error = code === "ENOSPC" ? "ENOSPC" : message(e);
        break;
      }
    }
  }
  await Deno.remove(path);
  let after: string;
  try {
    await Deno.writeTextFile(path, FILL_AFTER);
    after = await Deno.readTextFile(path);
    await Deno.remove(path);
  } catch (e) {
    after = `failed: ${message(e)}`;
  }
  const memory = memTotal(
    await Deno.readTextFile(meminfo).catch((e) => {
      if (e instanceof Deno.errors.NotFound) return ""; // no /proc/meminfo: the memory fact is absent
      throw e;
    }),
  );
  return [
    ["total", String(total)],
    ["available", String(available)],
    ["written", String(written)],
    ["error", error],
    ["after", after],
    ...(memory === null ? [] : [["memory", String(memory)] as [string, string]]),
  ];
}
