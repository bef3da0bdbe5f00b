/**
 * The streaming qcow2 converter against images made by the real `qemu-img` (converted from a raw disk with an MBR,
 * random data and holes), onto the in-memory disk: the disk must read as the raw source did, whatever the cluster
 * size, version, compression or the order in which the tables sit in the file.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { hasQemuImg, makeCorpus, qemuImg } from "../images/_qemu_img.ts";
import { FakeWipeDevice } from "./fake_wipe_device.ts";
import { DeployError, deployImage, type ImageStream } from "./deploy.ts";
import { Qcow2Converter, Qcow2ConvertError } from "./qcow2_stream.ts";

const MIB = 1024 * 1024;
const noQemuImg = hasQemuImg() ? undefined : "qemu-img is not installed (Debian qemu-utils)";
if (noQemuImg) console.error(`skipping qcow2 conversion tests: ${noQemuImg}`);
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/** A raw disk: an MBR (real sfdisk), 1 MiB of text-like bytes, random bytes, holes of zeros. */
async function rawDisk(dir: string, size: number): Promise<Uint8Array> {
  const b = new Uint8Array(size);
  for (let off = MIB; off < size; off += 256 * 1024) {
    if ((off / (256 * 1024)) % 3 === 1) continue; // a hole
    const piece = b.subarray(off, Math.min(off + 192 * 1024, size));
    if ((off / (256 * 1024)) % 3 === 0) piece.fill(0x61 + (off / MIB) % 20); // compresses well
    else for (let i = 0; i < piece.length; i += 65536) crypto.getRandomValues(piece.subarray(i, i + 65536));
  }
  const path = join(dir, "src.raw");
  await Deno.writeFile(path, b);
  const sf = new Deno.Command("sfdisk", { args: ["-q", path], stdin: "piped", stdout: "null", stderr: "piped" })
    .spawn();
  const w = sf.stdin.getWriter();
  await w.write(new TextEncoder().encode("label: dos\nstart=2048, size=4096, type=83\nstart=6144, type=83\n"));
  await w.close();
  const out = await sf.output();
  if (!out.success) throw new Error(`sfdisk: ${new TextDecoder().decode(out.stderr)}`);
  return await Deno.readFile(path);
}

/** Streams `bytes` in uneven pieces (1 byte, odd sizes, large), hashing them as the https stream does. */
function streamOf(bytes: Uint8Array): ImageStream {
  return async (sink, max) => {
    if (bytes.length > max) throw new Error(`too-large: ${bytes.length} > ${max}`);
    const h = createHash("sha256");
    for (let off = 0, i = 0; off < bytes.length; i++) {
      const n = Math.min([1, 23, 4095, 70_001, 1 << 20][i % 5]!, bytes.length - off);
      h.update(bytes.subarray(off, off + n));
      await sink.write(bytes.subarray(off, off + n));
      off += n;
    }
    await sink.end();
    return h.digest("hex");
  };
}

async function withDir<T>(f: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-qcow2-deploy-" });
  try {
    return await f(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name: "deployImage converts qemu-img's qcow2 images while they stream: the disk reads as the raw source",
  ignore: noQemuImg !== undefined,
  async fn(t) {
    await withDir(async (dir) => {
      const src = await rawDisk(dir, 12 * MIB);
      const variants: Record<string, string[]> = {
        "v3, 64 KiB clusters": [],
        "v2 (compat=0.10)": ["-o", "compat=0.10"],
        "512-byte clusters": ["-o", "cluster_size=512"],
        "2 MiB clusters": ["-o", "cluster_size=2M"],
        "zlib-compressed clusters (-c)": ["-c"],
        "compressed, 4 KiB clusters": ["-c", "-o", "cluster_size=4096"],
        "zstd-compressed clusters": ["-c", "-o", "compression_type=zstd"],
        "zstd, 4 KiB clusters": ["-c", "-o", "compression_type=zstd,cluster_size=4096"],
      };
      for (const [name, opts] of Object.entries(variants)) {
        await t.step(name, async () => {
          const q = join(dir, `${crypto.randomUUID()}.qcow2`);
          await qemuImg(dir, "convert", "-f", "raw", "-O", "qcow2", ...opts, join(dir, "src.raw"), q);
          const file = await Deno.readFile(q);
          const dev = new FakeWipeDevice({ sizeBytes: 16 * MIB });
          dev.bytes.fill(0xee);
          const out = await deployImage(dev, streamOf(file), sha(file), { format: "qcow2" });
          assert.deepEqual(
            out,
            { writtenBytes: src.length, sha256: sha(file) },
            "the stream's digest, the size mapped",
          );
          assert.ok(sha(dev.bytes.subarray(0, src.length)) === sha(src), "the disk reads as the raw source");
          assert.ok(dev.bytes.subarray(src.length).every((b) => b === 0xee), "nothing past the virtual size");
          assert.equal(dev.rereads, 1);
        });
      }
    });
  },
});

Deno.test({
  name: "a qcow2 whose tables come after its data is converted from the bounded spool, and refused past the bound",
  ignore: noQemuImg !== undefined,
  async fn(t) {
    await withDir(async (dir) => {
      const src = await rawDisk(dir, 6 * MIB);
      // Made small, written, then grown: the grown L1 table moves to the end of the file, after every data cluster.
      const q = join(dir, "grown.qcow2");
      await qemuImg(dir, "convert", "-f", "raw", "-O", "qcow2", "-o", "cluster_size=4096", join(dir, "src.raw"), q);
      await qemuImg(dir, "resize", "-f", "qcow2", q, "16M");
      const file = await Deno.readFile(q);
      const l1Offset = Number(new DataView(file.buffer).getBigUint64(40));
      assert.ok(l1Offset > file.length / 2, `the L1 table sits late in the file (${l1Offset} of ${file.length})`);
      await t.step("within the bound", async () => {
        const dev = new FakeWipeDevice({ sizeBytes: 16 * MIB });
        dev.bytes.fill(0xee);
        const out = await deployImage(dev, streamOf(file), sha(file), { format: "qcow2" });
        assert.equal(out.writtenBytes, 16 * MIB);
        assert.equal(sha(dev.bytes.subarray(0, src.length)), sha(src));
        assert.ok(dev.bytes.subarray(src.length).every((b) => b === 0), "the grown part reads as zeros");
      });
      await t.step("past the bound: unsupported-layout, the disk untouched", async () => {
        const dev = new FakeWipeDevice({ sizeBytes: 16 * MIB });
        dev.bytes.fill(0xee);
        await assert.rejects(
          deployImage(dev, streamOf(file), sha(file), { format: "qcow2", qcow2: { maxSpoolBytes: MIB } }),
          (e) => e instanceof DeployError && e.reason === "unsupported-layout" && !e.zeroedBootArea,
        );
        assert.ok(dev.bytes.every((b) => b === 0xee));
      });
    });
  },
});

Deno.test({
  name: "qcow2 headers bcd refuses are refused with their reason before any byte reaches the disk",
  ignore: noQemuImg !== undefined,
  async fn(t) {
    await withDir(async (dir) => {
      const corpus = await makeCorpus(dir, ["backing-qcow2", "data-file", "luks", "aes", "extended-l2"]);
      const rows: [string, string][] = [
        ["backing-qcow2", "backing-file"],
        ["data-file", "data-file"],
        ["luks", "encrypted"],
        ["aes", "encrypted"],
        ["extended-l2", "unsupported-feature"],
      ];
      for (const [name, reason] of rows) {
        await t.step(`${name}: ${reason}`, async () => {
          const file = await Deno.readFile(corpus[name]!);
          const dev = new FakeWipeDevice({ sizeBytes: 4 * MIB });
          dev.bytes.fill(0xee);
          await assert.rejects(
            deployImage(dev, streamOf(file), sha(file), { format: "qcow2" }),
            (e) => e instanceof DeployError && e.reason === reason && !e.zeroedBootArea,
          );
          assert.ok(dev.bytes.every((b) => b === 0xee), "nothing written");
        });
      }
      const v3 = await Deno.readFile(corpus["v3"]!);
      const patched = (at: number, bytes: number[]) => {
        const b = v3.slice();
        b.set(bytes, at);
        return b;
      };
      const u32 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
      const malformed: [string, Uint8Array, string][] = [
        ["no magic", patched(0, [0, 0, 0, 0]), "malformed"],
        ["version 4", patched(4, u32(4)), "malformed"],
        ["cluster_bits 30", patched(20, u32(30)), "malformed"],
        ["l1_size too small for the virtual size", patched(36, u32(0)), "malformed"],
        ["l1_size past QEMU's bound", patched(36, u32(0x01000000)), "malformed"],
        ["virtual size past the disk", patched(24, [0, 0, 0, 0, 0, 0x80, 0, 0]), "too-large"],
        ["virtual size not whole sectors", patched(24, [0, 0, 0, 0, 0, 0x10, 0, 1]), "malformed"],
        ["truncated inside the first cluster", v3.slice(0, 300), "malformed"],
      ];
      for (const [name, bytes, reason] of malformed) {
        await t.step(`${name}: ${reason}`, async () => {
          const dev = new FakeWipeDevice({ sizeBytes: 4 * MIB });
          dev.bytes.fill(0xee);
          await assert.rejects(
            deployImage(dev, streamOf(bytes), sha(bytes), { format: "qcow2" }),
            (e) => e instanceof DeployError && e.reason === reason && !e.zeroedBootArea,
          );
          assert.ok(dev.bytes.every((b) => b === 0xee), "nothing written");
        });
      }
    });
  },
});

Deno.test({
  name: "a qcow2 deploy with a wrong digest, or a table past the end of the stream, leaves the disk not bootable",
  ignore: noQemuImg !== undefined,
  async fn(t) {
    await withDir(async (dir) => {
      await rawDisk(dir, 4 * MIB);
      const q = join(dir, "img.qcow2");
      await qemuImg(dir, "convert", "-f", "raw", "-O", "qcow2", join(dir, "src.raw"), q);
      const file = await Deno.readFile(q);
      await t.step("wrong digest", async () => {
        const dev = new FakeWipeDevice({ sizeBytes: 8 * MIB });
        await assert.rejects(
          deployImage(dev, streamOf(file), "ab".repeat(32), { format: "qcow2" }),
          (e) => e instanceof DeployError && e.reason === "digest-mismatch" && e.zeroedBootArea,
        );
        assert.ok(dev.bytes.subarray(0, MIB).every((b) => b === 0));
        assert.equal(dev.rereads, 0);
      });
      await t.step("truncated after its L2 table", async () => {
        const cut = file.slice(0, 6 * 65536);
        const dev = new FakeWipeDevice({ sizeBytes: 8 * MIB });
        await assert.rejects(
          deployImage(dev, streamOf(cut), sha(cut), { format: "qcow2" }),
          (e) => e instanceof DeployError && e.reason === "malformed" && /past the end/.test(e.message),
        );
      });
      await t.step("a disk that reads back differently", async () => {
        const dev = new FakeWipeDevice({ sizeBytes: 8 * MIB });
        const read = dev.read.bind(dev);
        dev.read = async (off, len) => {
          const b = await read(off, len);
          if (off <= 2 * MIB && 2 * MIB < off + len) b[2 * MIB - off]! ^= 1;
          return b;
        };
        await assert.rejects(
          deployImage(dev, streamOf(file), sha(file), { format: "qcow2" }),
          (e) => e instanceof DeployError && e.reason === "verify-failed" && e.zeroedBootArea,
        );
      });
    });
  },
});

Deno.test("Qcow2Converter.verify refuses to run before the stream ended", async () => {
  const conv = new Qcow2Converter(new FakeWipeDevice({ sizeBytes: MIB }));
  await assert.rejects(conv.verify(), TypeError);
  await assert.rejects(conv.end(), (e) => e instanceof Qcow2ConvertError && e.reason === "malformed");
});
