import assert from "node:assert/strict";
import { join } from "node:path";
import { hasQemuImg, makeCorpus, putExtension, setU32, setU64 } from "./_qemu_img.ts";
import { type ImageReason, ImageRefused } from "./errors.ts";
import { checkImage, EXT_BACKING_FORMAT, EXT_CRYPTO, EXT_DATA_FILE, readQcow2Prefix } from "./qcow2_header.ts";

const HAS_QEMU_IMG = hasQemuImg();
/** One corpus for the module, made on first use and removed by the unload handler. */
const DIR = Deno.makeTempDirSync({ prefix: "bcd-qcow2-" });
globalThis.addEventListener("unload", () => Deno.removeSync(DIR, { recursive: true }));
if (!HAS_QEMU_IMG) {
  console.log("skipping qcow2 header tests: `qemu-img` is not installed (Debian package `qemu-utils`)");
}

async function verdict(path: string): Promise<ImageReason | "accepted"> {
  try {
    await checkImage(path, "qcow2");
    return "accepted";
  } catch (e) {
    if (e instanceof ImageRefused) return e.reason;
    throw e;
  }
}

/** Images made by real qemu-img, one row per kind, with the verdict the seed gives each. */
const REAL: Array<[string, ImageReason | "accepted"]> = [
  ["v2", "accepted"],
  ["v3", "accepted"],
  ["v3-lazy-refcounts", "accepted"],
  ["zstd", "accepted"],
  ["extended-l2", "accepted"],
  ["cluster-512", "accepted"],
  ["cluster-2M", "accepted"],
  ["v2-cluster-512", "accepted"],
  ["bitmap", "accepted"],
  ["backing-qcow2", "backing-file"],
  ["backing-raw", "backing-file"],
  ["v2-backing", "backing-file"],
  ["data-file", "data-file"],
  ["data-file-raw", "data-file"],
  ["luks", "encrypted"],
  ["aes", "encrypted"],
  ["base.raw", "malformed"],
];

const NAMES = REAL.map(([n]) => n);
const enc = new TextEncoder();

/** Byte patches of the real v3 image: one row per refusal of seed 000 §Tenant images, plus tolerated variants. */
const PATCHES: Array<[string, (b: Uint8Array) => Uint8Array, ImageReason | "accepted"]> = [
  ["bad magic", (b) => (setU32(b, 0, 0x514649fa), b), "malformed"],
  ["version 1", (b) => (setU32(b, 4, 1), b), "malformed"],
  ["version 4", (b) => (setU32(b, 4, 4), b), "malformed"],
  ["cluster_bits 8", (b) => (setU32(b, 20, 8), b), "malformed"],
  ["cluster_bits 22", (b) => (setU32(b, 20, 22), b), "malformed"],
  ["header_length 96", (b) => (setU32(b, 100, 96), b), "malformed"],
  ["header_length 108 (not a multiple of 8)", (b) => (setU32(b, 100, 108), b), "malformed"],
  ["header_length past the cluster", (b) => (setU32(b, 100, 65536 + 8), b), "malformed"],
  ["dirty bit", (b) => (setU64(b, 72, 1n), b), "malformed"],
  ["corrupt bit", (b) => (setU64(b, 72, 2n), b), "malformed"],
  ["refcount_order 7", (b) => (setU32(b, 96, 7), b), "malformed"],
  ["compression type 2", (b) => ((b[104] = 2), b), "malformed"],
  ["compression bit with zlib type", (b) => (setU64(b, 72, 8n), b), "malformed"],
  ["zstd type without its bit", (b) => ((b[104] = 1), b), "malformed"],
  ["extension running past the cluster", (b) => (putExtension(b, 0x12345678, 65536), b), "malformed"],
  ["extension without its end marker", (b) => (putExtension(b, 0x12345678, 65536 - 112 - 8), b), "malformed"],
  [
    "backing format extension too long",
    (b) => (putExtension(b, EXT_BACKING_FORMAT, enc.encode("q".repeat(16))), b),
    "malformed",
  ],
  ["backing name outside the cluster", (b) => (setU64(b, 8, 65530n), setU32(b, 16, 100), b), "malformed"],
  ["backing name over 1023 bytes", (b) => (setU64(b, 8, 1024n), setU32(b, 16, 1024), b), "malformed"],
  ["backing name not UTF-8", (b) => (setU64(b, 8, 1024n), setU32(b, 16, 2), b.set([0xff, 0xfe], 1024), b), "malformed"],
  ["truncated to 71 bytes", (b) => b.slice(0, 71), "malformed"],
  ["truncated to 100 bytes (v3 needs 104)", (b) => b.slice(0, 100), "malformed"],
  ["truncated inside the extensions", (b) => b.slice(0, 200), "malformed"],
  ["empty file", () => new Uint8Array(0), "malformed"],
  [
    "backing_file_offset set",
    (b) => (setU64(b, 8, 1024n), setU32(b, 16, 6), b.set(enc.encode("/x.img"), 1024), b),
    "backing-file",
  ],
  ["backing_file_size set alone", (b) => (setU32(b, 16, 10), b), "backing-file"],
  ["incompatible bit 2 (data file)", (b) => (setU64(b, 72, 4n), b), "data-file"],
  ["data-file extension", (b) => (putExtension(b, EXT_DATA_FILE, enc.encode("/dev/sda")), b), "data-file"],
  ["incompatible bit 5", (b) => (setU64(b, 72, 1n << 5n), b), "unknown-feature"],
  ["incompatible bit 63", (b) => (setU64(b, 72, 1n << 63n), b), "unknown-feature"],
  ["crypt_method 1 (AES)", (b) => (setU32(b, 32, 1), b), "encrypted"],
  ["crypt_method 2 (LUKS)", (b) => (setU32(b, 32, 2), b), "encrypted"],
  ["encryption extension", (b) => (putExtension(b, EXT_CRYPTO, new Uint8Array(16)), b), "encrypted"],
  ["unknown extension type (ignored)", (b) => (putExtension(b, 0x12345678, new Uint8Array(8)), b), "accepted"],
  ["unknown compatible bit (ignored)", (b) => (setU64(b, 80, 1n << 60n), b), "accepted"],
  ["unknown autoclear bit (ignored)", (b) => (setU64(b, 88, 1n << 60n), b), "accepted"],
];

Deno.test({
  name: "checkImage(qcow2) against real qemu-img images and byte-patched variants",
  ignore: !HAS_QEMU_IMG,
  async fn(t) {
    const dir = DIR;
    {
      const corpus = await makeCorpus(dir, NAMES);
      for (const [name, want] of REAL) {
        await t.step(`qemu-img ${name}: ${want}`, async () => assert.equal(await verdict(corpus[name]!), want));
      }
      const v3 = await Deno.readFile(corpus["v3"]!);
      for (const [what, patch, want] of PATCHES) {
        await t.step(`patched v3, ${what}: ${want}`, async () => {
          const p = join(dir, "patched.qcow2");
          await Deno.writeFile(p, patch(v3.slice()));
          assert.equal(await verdict(p), want);
        });
      }
    }
  },
});

Deno.test({
  name: "readQcow2Prefix() reads at most the first cluster and refuses what is not a regular file",
  ignore: !HAS_QEMU_IMG,
  async fn() {
    const dir = DIR;
    {
      const corpus = await makeCorpus(dir, NAMES);
      assert.equal((await readQcow2Prefix(corpus["v3"]!)).length, 65536);
      assert.equal((await readQcow2Prefix(corpus["cluster-512"]!)).length, 512);
      assert.ok((await Deno.stat(corpus["cluster-2M"]!)).size > 2 * 1024 * 1024);
      assert.equal((await readQcow2Prefix(corpus["cluster-2M"]!)).length, 2 * 1024 * 1024);
      await Deno.symlink(corpus["v3"]!, join(dir, "link.qcow2"));
      assert.equal(await verdict(join(dir, "link.qcow2")), "malformed");
      await new Deno.Command("mkfifo", { args: [join(dir, "fifo")] }).output();
      assert.equal(await verdict(join(dir, "fifo")), "malformed"); // and does not block on the FIFO
      assert.equal(await verdict(dir), "malformed");
    }
  },
});

Deno.test("checkImage(raw|iso) opens the image without probing it: a missing file is an error, not a verdict", async () => {
  const dir = await Deno.makeTempDir();
  try {
    // qcow2 bytes in a file named raw: never probed, so its header is only data.
    const qcow2ish = join(dir, "disk.raw");
    await Deno.writeFile(qcow2ish, new Uint8Array([0x51, 0x46, 0x49, 0xfb, 0, 0, 0, 3]));
    await Deno.symlink(qcow2ish, join(dir, "link.raw"));
    for (const format of ["raw", "iso"] as const) {
      assert.deepEqual(await checkImage(qcow2ish, format), { format, probed: false });
      await assert.rejects(checkImage(join(dir, "missing"), format), Deno.errors.NotFound);
      await assert.rejects(
        checkImage(join(dir, "link.raw"), format),
        (e) => e instanceof ImageRefused && e.reason === "malformed",
      );
      await assert.rejects(checkImage(dir, format), (e) => e instanceof ImageRefused && e.reason === "malformed");
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
