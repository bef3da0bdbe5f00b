import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { FakeWipeDevice } from "./fake_wipe_device.ts";
import { DeployError, deployRawImage, type ImageStream, PartitionTableError } from "./deploy.ts";

const MIB = 1024 * 1024;
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

function image(n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + 7) & 0xff;
  return b;
}

/** Streams `img` in uneven pieces, hashing as a real stream does; `failAt` breaks it after that many bytes. */
function stream(img: Uint8Array, failAt?: number): ImageStream {
  return async (sink, max) => {
    if (img.length > max) throw new Error("too-large");
    const h = createHash("sha256");
    for (let off = 0, i = 0; off < img.length; i++) {
      if (failAt !== undefined && off >= failAt) throw new Error("broken");
      const n = Math.min([1, 4095, 70_000, 1 << 20][i % 4]!, img.length - off);
      h.update(img.subarray(off, off + n));
      await sink.write(img.subarray(off, off + n));
      off += n;
    }
    await sink.end();
    return h.digest("hex");
  };
}

const reason = (e: unknown) => e instanceof Error && /broken|too-large/.test(e.message) ? e.message : undefined;

Deno.test("deployRawImage writes an image of any length in aligned chunks, pads the last sector, verifies it", async () => {
  const img = image(3 * MIB + 1234);
  const dev = new FakeWipeDevice({ sizeBytes: 8 * MIB });
  dev.bytes.fill(0xee);
  const out = await deployRawImage(dev, stream(img), sha(img), { chunkBytes: MIB, streamError: reason });
  assert.deepEqual(out, { writtenBytes: img.length, sha256: sha(img) });
  assert.deepEqual(dev.bytes.subarray(0, img.length), img);
  const padEnd = Math.ceil(img.length / 512) * 512;
  assert.ok(dev.bytes.subarray(img.length, padEnd).every((b) => b === 0), "the last sector is padded with zeros");
  assert.ok(dev.bytes.subarray(padEnd).every((b) => b === 0xee), "nothing past it is written");
  assert.equal(dev.rereads, 1);
});

Deno.test("deployRawImage never leaves a half-trusted disk: the first MiB is zeroed on every late failure", async (t) => {
  const img = image(3 * MIB);
  await t.step("a digest that differs", async () => {
    const dev = new FakeWipeDevice({ sizeBytes: 8 * MIB });
    await assert.rejects(
      deployRawImage(dev, stream(img), "0".repeat(64), { streamError: reason }),
      (e) => e instanceof DeployError && e.reason === "digest-mismatch" && e.zeroedBootArea,
    );
    assert.ok(dev.bytes.subarray(0, MIB).every((b) => b === 0));
    assert.equal(dev.rereads, 0, "the partition table of a refused image is not read");
  });
  await t.step("a stream that breaks after bytes were written", async () => {
    const dev = new FakeWipeDevice({ sizeBytes: 8 * MIB });
    await assert.rejects(
      deployRawImage(dev, stream(img, 2 * MIB), sha(img), { chunkBytes: MIB, streamError: reason }),
      (e) => e instanceof DeployError && e.reason === "broken" && e.zeroedBootArea,
    );
    assert.ok(dev.bytes.subarray(0, MIB).every((b) => b === 0));
  });
  await t.step("a read-back that differs from what was written", async () => {
    const dev = new FakeWipeDevice({ sizeBytes: 8 * MIB });
    const read = dev.read.bind(dev);
    dev.read = async (o, n) => {
      const b = await read(o, n);
      if (o === 2 * MIB) b[17] = b[17]! ^ 1;
      return b;
    };
    await assert.rejects(
      deployRawImage(dev, stream(img), sha(img), { chunkBytes: MIB, streamError: reason }),
      (e) => e instanceof DeployError && e.reason === "verify-failed" && e.zeroedBootArea,
    );
    assert.ok(dev.bytes.subarray(0, MIB).every((b) => b === 0));
  });
  await t.step("an image whose partition table the kernel cannot read", async () => {
    const dev = new FakeWipeDevice({ sizeBytes: 8 * MIB });
    dev.rereadPartitions = () => Promise.reject(new PartitionTableError("partx: failed to read partition table"));
    await assert.rejects(
      deployRawImage(dev, stream(img), sha(img), { streamError: reason }),
      (e) => e instanceof DeployError && e.reason === "partition-table",
    );
    assert.ok(dev.bytes.subarray(0, MIB).every((b) => b === 0));
  });
  await t.step("a refusal before any byte (too large) leaves the disk as it was", async () => {
    const dev = new FakeWipeDevice({ sizeBytes: 2 * MIB });
    dev.bytes.fill(0xee);
    await assert.rejects(
      deployRawImage(dev, stream(img), sha(img), { streamError: reason }),
      (e) => e instanceof DeployError && e.reason === "too-large" && !e.zeroedBootArea,
    );
    assert.ok(dev.bytes.every((b) => b === 0xee));
  });
  await t.step("a digest that is not SHA-256 is refused before anything", async () => {
    await assert.rejects(deployRawImage(new FakeWipeDevice({ sizeBytes: MIB }), stream(img), "abc"), RangeError);
  });
});
