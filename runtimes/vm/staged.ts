/**
 * Staged images and their bindings (seed 002 §Staged images, §The checked handoff). Staging verifies an image
 * explicitly — it hashes it only when a manifest lies beside it (`PATH.manifest.json`: `{"name", "sha256"}`, and
 * `"uuid"` when it names the identity) and compares the manifest's name and digest with the image's own — then binds
 * it from metadata: its device, inode, size, modification and change times in nanoseconds. A launch never hashes: it
 * opens each image once, checks the opened file's metadata against the binding and hands that very file to the VMM.
 *
 * The times are the kernel's coarse file times (a tick of a few milliseconds): a write in the very tick of the staging
 * keeps them, and only a change of size, device or inode shows it then, as for the seed's modification-time check.
 *
 * The record, `runtime-adapter-staged.json` in the sandbox store (format 1), is read strictly: another format, a
 * missing or extra member, or a binding that does not decode is refused.
 *
 * @module
 */
import fs from "node:fs";
import { basename } from "node:path";

export type DistroFormat = "erofs" | "gpt";

/** What the image was when it was staged. */
export interface FileBinding {
  readonly dev: string;
  readonly ino: string;
  readonly size: string;
  readonly mtimeNs: string;
  readonly ctimeNs: string;
}

/** The distro image's binding: its format and identity, its metadata, and the digest a manifest confirmed. */
export interface DistroBinding extends FileBinding {
  readonly format: DistroFormat;
  readonly identity: string;
  readonly sha256: string | null;
}

/** The scratch image's binding: its metadata alone (binding neither reads nor claims it). */
export type ScratchBinding = FileBinding;

/** The staged record. */
export interface StagedRecord {
  readonly format: 1;
  readonly distro: { readonly path: string; readonly binding: DistroBinding };
  readonly scratch: { readonly path: string; readonly binding: ScratchBinding } | null;
}

export const STAGED_FILE = "runtime-adapter-staged.json";

/** An image that staging refuses, or a binding that no longer holds. */
export class BindingRefused extends Error {
  override name = "BindingRefused";
}

/** A staged record that does not decode. */
export class StagedRecordInvalid extends Error {
  override name = "StagedRecordInvalid";
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function _meta(st: fs.BigIntStats, path: string): FileBinding {
  if (!st.isFile()) throw new BindingRefused(`${path} is not a regular file`);
  if (st.size === 0n) throw new BindingRefused(`${path} is empty; no launch could attach it`);
  return {
    dev: String(st.dev),
    ino: String(st.ino),
    size: String(st.size),
    mtimeNs: String(st.mtimeNs),
    ctimeNs: String(st.ctimeNs),
  };
}

function _statPath(path: string): fs.BigIntStats {
  if (!path.startsWith("/")) throw new BindingRefused(`${JSON.stringify(path)} is not an absolute path`);
  try {
    return fs.statSync(path, { bigint: true });
  } catch (e) {
    throw new BindingRefused(`cannot stat ${path}: ${(e as Error).message}`, { cause: e });
  }
}

async function _sha256(path: string): Promise<string> {
  const hash = (await import("node:crypto")).createHash("sha256");
  const f = await Deno.open(path, { read: true });
  try {
    const buf = new Uint8Array(1 << 20);
    for (;;) {
      const n = await f.read(buf);
      if (n === null) break;
      hash.update(buf.subarray(0, n));
    }
  } finally {
    f.close();
  }
  return hash.digest("hex");
}

/**
 * Verifies and binds the distro image (`DistroBinding::verify`): with a manifest beside it, hashes it and compares the
 * manifest's name, digest and (when given) UUID; without one, binds it unhashed.
 */
export async function bindDistro(path: string, format: DistroFormat, identity: string): Promise<DistroBinding> {
  if (format !== "erofs" && format !== "gpt") {
    throw new BindingRefused(`format ${JSON.stringify(format)} is not erofs or gpt`);
  }
  if (!UUID.test(identity)) throw new BindingRefused(`identity ${JSON.stringify(identity)} is not a UUID`);
  const before = _meta(_statPath(path), path);
  let sha256: string | null = null;
  let manifest: unknown;
  try {
    manifest = JSON.parse(await Deno.readTextFile(`${path}.manifest.json`));
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) {
      throw new BindingRefused(`cannot read ${path}.manifest.json: ${(e as Error).message}`, { cause: e });
    }
  }
  if (manifest !== undefined) {
    const m = manifest as { name?: unknown; sha256?: unknown; uuid?: unknown };
    if (typeof m.name !== "string" || typeof m.sha256 !== "string") {
      throw new BindingRefused(`${path}.manifest.json lacks a name or sha256`);
    }
    if (m.name !== basename(path)) {
      throw new BindingRefused(`${path}.manifest.json names image ${JSON.stringify(m.name)}, not ${basename(path)}`);
    }
    sha256 = await _sha256(path);
    if (m.sha256.toLowerCase() !== sha256) {
      throw new BindingRefused(`${path}.manifest.json names digest ${m.sha256}; the image's is ${sha256}`);
    }
    if (m.uuid !== undefined && String(m.uuid).toLowerCase() !== identity.toLowerCase()) {
      throw new BindingRefused(`${path}.manifest.json names identity ${String(m.uuid)}, not ${identity}`);
    }
    const after = _meta(_statPath(path), path);
    if (JSON.stringify(after) !== JSON.stringify(before)) throw new BindingRefused(`${path} changed while staging`);
  }
  return { format, identity, ...before, sha256 };
}

/** Binds the scratch image (`ScratchBinding::bind`): metadata only. */
export function bindScratch(path: string): ScratchBinding {
  return _meta(_statPath(path), path);
}

/** Checks an opened file's metadata against a binding (`check`: never reads, never hashes). */
export function checkBinding(fd: number, path: string, binding: FileBinding): void {
  const now = _meta(fs.fstatSync(fd, { bigint: true }), path);
  for (const k of ["dev", "ino", "size", "mtimeNs", "ctimeNs"] as const) {
    if (now[k] !== binding[k]) {
      throw new BindingRefused(
        `${path} no longer holds its binding: ${k} ${now[k]}, staged ${binding[k]}` +
          (k === "dev" || k === "ino" ? " (the file was replaced)" : " (the file changed)"),
      );
    }
  }
}

function _expectKeys(o: unknown, keys: readonly string[], what: string): Record<string, unknown> {
  if (typeof o !== "object" || o === null || Array.isArray(o)) {
    throw new StagedRecordInvalid(`${what} is not an object`);
  }
  const have = Object.keys(o).sort();
  const want = [...keys].sort();
  if (have.join(",") !== want.join(",")) {
    throw new StagedRecordInvalid(`${what} has members ${have.join(",")}; expected ${want.join(",")}`);
  }
  return o as Record<string, unknown>;
}

const FILE_KEYS = ["dev", "ino", "size", "mtimeNs", "ctimeNs"] as const;

function _fileBinding(o: unknown, extra: readonly string[], what: string): Record<string, unknown> {
  const r = _expectKeys(o, [...FILE_KEYS, ...extra], what);
  for (const k of FILE_KEYS) {
    if (typeof r[k] !== "string" || !/^(0|[1-9]\d*)$/.test(r[k] as string)) {
      throw new StagedRecordInvalid(`${what}.${k} is not a decimal string`);
    }
  }
  return r;
}

/** Decodes a distro binding (strict). */
export function decodeDistroBinding(o: unknown, what = "distro binding"): DistroBinding {
  const r = _fileBinding(o, ["format", "identity", "sha256"], what);
  if (r.format !== "erofs" && r.format !== "gpt") throw new StagedRecordInvalid(`${what}.format is not erofs or gpt`);
  if (typeof r.identity !== "string" || !UUID.test(r.identity)) {
    throw new StagedRecordInvalid(`${what}.identity is not a UUID`);
  }
  if (r.sha256 !== null && (typeof r.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(r.sha256))) {
    throw new StagedRecordInvalid(`${what}.sha256 is not null or a hex digest`);
  }
  return r as unknown as DistroBinding;
}

/** Decodes a scratch binding (strict). */
export function decodeScratchBinding(o: unknown, what = "scratch binding"): ScratchBinding {
  return _fileBinding(o, [], what) as unknown as ScratchBinding;
}

function _path(o: unknown, what: string): string {
  if (typeof o !== "string" || !o.startsWith("/")) throw new StagedRecordInvalid(`${what} is not an absolute path`);
  return o;
}

/** Reads the staged record's text strictly. */
export function decodeStaged(text: string): StagedRecord {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch (e) {
    throw new StagedRecordInvalid(`${STAGED_FILE} is not JSON: ${(e as Error).message}`, { cause: e });
  }
  const r = _expectKeys(o, ["format", "distro", "scratch"], STAGED_FILE);
  if (r.format !== 1) throw new StagedRecordInvalid(`${STAGED_FILE} has format ${JSON.stringify(r.format)}, not 1`);
  const d = _expectKeys(r.distro, ["path", "binding"], "distro");
  const distro = { path: _path(d.path, "distro.path"), binding: decodeDistroBinding(d.binding) };
  let scratch: StagedRecord["scratch"] = null;
  if (r.scratch !== null) {
    const s = _expectKeys(r.scratch, ["path", "binding"], "scratch");
    scratch = { path: _path(s.path, "scratch.path"), binding: decodeScratchBinding(s.binding) };
  }
  return { format: 1, distro, scratch };
}

/** The record's text. */
export function encodeStaged(r: StagedRecord): string {
  return JSON.stringify(r) + "\n";
}
