/**
 * Test-only: real qcow2 images made by `qemu-img` into a temporary directory (the image corpus of the header tests,
 * the fuzzer and the benchmark), and byte patches of their headers. Not exported from mod.ts.
 *
 * @module
 */
import { join } from "node:path";

/** Whether `qemu-img` runs here; callers skip with a printed reason when it does not. */
export function hasQemuImg(): boolean {
  try {
    return new Deno.Command("qemu-img", { args: ["--version"], stdout: "null", stderr: "null" }).outputSync().success;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** Runs `qemu-img args…` in `cwd`, throwing with its stderr on failure. */
export async function qemuImg(cwd: string, ...args: string[]): Promise<void> {
  for (let attempt = 1;; attempt++) {
    const out = await new Deno.Command("qemu-img", { args, cwd, stdout: "null", stderr: "piped" }).output();
    if (out.success) return;
    const err = new TextDecoder().decode(out.stderr);
    // LUKS key setup benchmarks PBKDF2 with getrusage, which on a busy shared CPU sometimes measures nothing.
    if (attempt < 8 && err.includes("Unable to get accurate CPU usage")) continue;
    throw new Error(`qemu-img ${args.join(" ")}: ${err}`);
  }
}

const _SECRET = ["--object", "secret,id=s0,data=bcd-test"];

/**
 * Real images, by name: the accepted kinds and the refused kinds qemu-img can make. Returns name → absolute path.
 * `base.raw` is a raw base for overlays. With `only`, just those (plus `v3` and `base.raw`, which others name).
 */
export function makeCorpus(dir: string, only?: readonly string[]): Promise<Record<string, string>> {
  const key = `${dir}\0${only?.join(",") ?? ""}`;
  let p = _corpora.get(key);
  if (!p) _corpora.set(key, p = _makeCorpus(dir, only));
  return p;
}
const _corpora = new Map<string, Promise<Record<string, string>>>();

async function _makeCorpus(dir: string, only?: readonly string[]): Promise<Record<string, string>> {
  const specs: Record<string, string[]> = {
    "v2": ["create", "-f", "qcow2", "-o", "compat=0.10", "v2.qcow2", "1M"],
    "v3": ["create", "-f", "qcow2", "v3.qcow2", "1M"],
    "v3-lazy-refcounts": ["create", "-f", "qcow2", "-o", "lazy_refcounts=on", "v3-lazy-refcounts.qcow2", "1M"],
    "zstd": ["create", "-f", "qcow2", "-o", "compression_type=zstd", "zstd.qcow2", "1M"],
    "extended-l2": ["create", "-f", "qcow2", "-o", "extended_l2=on", "extended-l2.qcow2", "1M"],
    "cluster-512": ["create", "-f", "qcow2", "-o", "cluster_size=512", "cluster-512.qcow2", "1M"],
    "cluster-2M": ["create", "-f", "qcow2", "-o", "cluster_size=2M", "cluster-2M.qcow2", "1M"],
    "v2-cluster-512": ["create", "-f", "qcow2", "-o", "compat=0.10,cluster_size=512", "v2-cluster-512.qcow2", "1M"],
    "base.raw": ["create", "-f", "raw", "base.raw", "1M"],
    "backing-qcow2": [
      "create",
      "-f",
      "qcow2",
      "-u",
      "-b",
      join(dir, "v3.qcow2"),
      "-F",
      "qcow2",
      "backing-qcow2.qcow2",
      "1M",
    ],
    "backing-raw": ["create", "-f", "qcow2", "-u", "-b", join(dir, "base.raw"), "-F", "raw", "backing-raw.qcow2", "1M"],
    "v2-backing": [
      "create",
      "-f",
      "qcow2",
      "-o",
      "compat=0.10",
      "-u",
      "-b",
      join(dir, "v3.qcow2"),
      "-F",
      "qcow2",
      "v2-backing.qcow2",
      "1M",
    ],
    "data-file": ["create", "-f", "qcow2", "-o", `data_file=${join(dir, "data.raw")}`, "data-file.qcow2", "1M"],
    "data-file-raw": [
      "create",
      "-f",
      "qcow2",
      "-o",
      `data_file=${join(dir, "data2.raw")},data_file_raw=on`,
      "data-file-raw.qcow2",
      "1M",
    ],
    "luks": [
      "create",
      "-f",
      "qcow2",
      ..._SECRET,
      "-o",
      "encrypt.format=luks,encrypt.key-secret=s0,encrypt.iter-time=10",
      "luks.qcow2",
      "1M",
    ],
    "aes": ["create", "-f", "qcow2", ..._SECRET, "-o", "encrypt.format=aes,encrypt.key-secret=s0", "aes.qcow2", "1M"],
    "overlay-with-data-file": [
      "create",
      "-f",
      "qcow2",
      "-u",
      "-b",
      join(dir, "v3.qcow2"),
      "-F",
      "qcow2",
      "-o",
      `data_file=${join(dir, "data3.raw")}`,
      "overlay-with-data-file.qcow2",
      "1M",
    ],
    "overlay-luks": [
      "create",
      "-f",
      "qcow2",
      ..._SECRET,
      "-u",
      "-b",
      join(dir, "v3.qcow2"),
      "-F",
      "qcow2",
      "-o",
      "encrypt.format=luks,encrypt.key-secret=s0,encrypt.iter-time=10",
      "overlay-luks.qcow2",
      "1M",
    ],
    "overlay-flat": ["create", "-f", "qcow2", "overlay-flat.qcow2", "1M"],
  };
  const out: Record<string, string> = {};
  for (const [name, args] of Object.entries(specs)) {
    if (only && !only.includes(name) && name !== "v3" && name !== "base.raw") continue;
    await qemuImg(dir, ...args);
    out[name] = join(dir, args[args.length - 2]!);
  }
  // A bitmap adds the bitmaps extension and autoclear bit 0.
  if (only && !only.includes("bitmap")) return out;
  await Deno.copyFile(out["v3"]!, join(dir, "bitmap.qcow2"));
  await qemuImg(dir, "bitmap", "--add", "bitmap.qcow2", "b0");
  out["bitmap"] = join(dir, "bitmap.qcow2");
  return out;
}

/** Big-endian field writers for header patches. */
export function setU32(b: Uint8Array, off: number, v: number): void {
  new DataView(b.buffer, b.byteOffset, b.byteLength).setUint32(off, v);
}
export function setU64(b: Uint8Array, off: number, v: bigint): void {
  new DataView(b.buffer, b.byteOffset, b.byteLength).setBigUint64(off, v);
}

/** Replaces the header extensions of a v3 image (at header_length) with one extension and an end marker. */
export function putExtension(b: Uint8Array, type: number, data: Uint8Array | number): void {
  const hl = new DataView(b.buffer, b.byteOffset).getUint32(100);
  const len = typeof data === "number" ? data : data.length;
  setU32(b, hl, type);
  setU32(b, hl + 4, len);
  if (typeof data !== "number") {
    b.set(data, hl + 8);
    const end = hl + 8 + Math.ceil(len / 8) * 8;
    if (end + 8 <= b.length) b.fill(0, end, end + 8);
  }
}
