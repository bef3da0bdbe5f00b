/**
 * `deploy.image` of a raw image onto real loop disks, streamed from a loopback https server that a test CA signs.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { DeployError, deployRawImage } from "../../core/disks/mod.ts";
import { BlockWipeDevice } from "./block_wipe_device.ts";
import { httpsImageStream, imageStreamReason } from "./image_stream.ts";
import { withServer } from "./https_origin_testing.ts";
import { startTestHelper } from "../helper/helper_testing.ts";
import { DiskGuard } from "./disk_guard.ts";
import { DiskDeploys } from "./disk_deploys.ts";
import { type LoopDisk, loopSkipReason, makeLoopDisk } from "../../fixtures/disks/loop_disk.ts";
import { hasQemuImg, qemuImg } from "../../core/images/_qemu_img.ts";

const MIB = 1024 * 1024;
const skip = loopSkipReason();

/** A raw disk image with an MBR of two partitions (made by the real sfdisk) and random bytes after it. */
async function makeImage(size: number): Promise<Uint8Array> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-image-" });
  try {
    const img = `${dir}/disk.raw`;
    const bytes = new Uint8Array(size);
    for (let off = 0; off < size; off += 65536) crypto.getRandomValues(bytes.subarray(off, off + 65536));
    bytes.fill(0, 0, MIB);
    await Deno.writeFile(img, bytes);
    const sf = new Deno.Command("sfdisk", { args: ["-q", img], stdin: "piped", stdout: "null", stderr: "piped" })
      .spawn();
    const w = sf.stdin.getWriter();
    await w.write(new TextEncoder().encode("label: dos\nstart=2048, size=2048, type=83\nstart=4096, type=83\n"));
    await w.close();
    const out = await sf.output();
    if (!out.success) throw new Error(`sfdisk: ${new TextDecoder().decode(out.stderr)}`);
    return await Deno.readFile(img);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

async function withLoop(size: number, f: (loop: LoopDisk, dev: BlockWipeDevice) => Promise<void>): Promise<void> {
  const loop = await makeLoopDisk(size, { partscan: true });
  try {
    await Deno.writeFile(loop.backingFile, new Uint8Array(size).fill(0xee));
    const dev = await BlockWipeDevice.open(loop.kernelName);
    try {
      await f(loop, dev);
    } finally {
      dev.close();
    }
  } finally {
    await loop.close();
  }
}

Deno.test({
  name: "deploy.image writes a raw image through an https redirect, re-reads the partition table and verifies it",
  ignore: skip !== undefined,
  async fn() {
    const image = await makeImage(12 * MIB);
    await withServer(image, async (base, fetcher) => {
      await withLoop(32 * MIB, async (loop, dev) => {
        const out = await deployRawImage(dev, httpsImageStream(`${base}/to-https`, { fetch: fetcher }), sha(image), {
          streamError: imageStreamReason,
        });
        assert.deepEqual(out, { writtenBytes: 12 * MIB, sha256: sha(image) });
        const disk = await Deno.readFile(loop.backingFile);
        assert.equal(sha(disk.subarray(0, 12 * MIB)), sha(image));
        assert.ok(disk.subarray(12 * MIB).every((b) => b === 0xee), "nothing written past the image");
        const parts = (await Array.fromAsync(Deno.readDir(`/sys/block/${loop.kernelName}`))).map((e) => e.name)
          .filter((n) => n.startsWith(loop.kernelName)).sort();
        assert.deepEqual(
          parts,
          [`${loop.kernelName}p1`, `${loop.kernelName}p2`],
          "the kernel sees the image's partitions",
        );
      });
    });
  },
});

Deno.test({
  name: "deploy.image with a wrong digest leaves the disk not bootable: its first MiB zeroed",
  ignore: skip !== undefined,
  async fn() {
    const image = await makeImage(6 * MIB);
    await withServer(image, async (base, fetcher) => {
      await withLoop(16 * MIB, async (loop, dev) => {
        await assert.rejects(
          deployRawImage(dev, httpsImageStream(`${base}/image.raw`, { fetch: fetcher }), "ab".repeat(32), {
            streamError: imageStreamReason,
          }),
          (e) => e instanceof DeployError && e.reason === "digest-mismatch" && e.zeroedBootArea,
        );
        const disk = await Deno.readFile(loop.backingFile);
        assert.ok(disk.subarray(0, MIB).every((b) => b === 0), "the partition table and boot code are gone");
        const show = await new Deno.Command("partx", {
          args: ["--show", loop.devicePath],
          stdout: "null",
          stderr: "piped",
        })
          .output();
        assert.ok(!show.success, "no partition table is left on the refused disk");
      });
    });
  },
});

Deno.test({
  name: "deploy.image refuses a redirect to http before writing, and zeroes the boot area when the stream breaks",
  ignore: skip !== undefined,
  async fn(t) {
    const image = await makeImage(8 * MIB);
    await withServer(image, async (base, fetcher) => {
      await t.step("redirect to http", async () => {
        await withLoop(16 * MIB, async (loop, dev) => {
          await assert.rejects(
            deployRawImage(dev, httpsImageStream(`${base}/to-http`, { fetch: fetcher }), sha(image), {
              streamError: imageStreamReason,
            }),
            (e) => e instanceof DeployError && e.reason === "not-https" && !e.zeroedBootArea,
          );
          assert.ok((await Deno.readFile(loop.backingFile)).every((b) => b === 0xee), "the disk is untouched");
        });
      });
      await t.step("an image larger than the disk", async () => {
        await withLoop(4 * MIB, async (_loop, dev) => {
          await assert.rejects(
            deployRawImage(dev, httpsImageStream(`${base}/image.raw`, { fetch: fetcher }), sha(image), {
              streamError: imageStreamReason,
            }),
            (e) => e instanceof DeployError && e.reason === "too-large",
          );
        });
      });
      await t.step("a stream that breaks after 5 MiB", async () => {
        await withLoop(16 * MIB, async (loop, dev) => {
          await assert.rejects(
            deployRawImage(dev, httpsImageStream(`${base}/broken`, { fetch: fetcher }), sha(image), {
              streamError: imageStreamReason,
            }),
            (e) => e instanceof DeployError && e.reason === "download-failed" && e.zeroedBootArea,
          );
          const disk = await Deno.readFile(loop.backingFile);
          assert.ok(disk.subarray(0, MIB).every((b) => b === 0));
        });
      });
    });
  },
});

Deno.test({
  name: "a ramdisk helper's disk.deploy fetches the image itself and writes it to the disk named by its by-id name",
  ignore: skip !== undefined,
  async fn() {
    const image = await makeImage(6 * MIB);
    await withServer(image, async (base, fetcher) => {
      const loop = await makeLoopDisk(16 * MIB, { partscan: true });
      const deploys = new DiskDeploys({ guard: new DiskGuard({ dev: loop.devRoot }), fetch: fetcher });
      const h = await startTestHelper({ role: "ramdisk", deploys });
      try {
        const ok = await h.client.call("disk.deploy", {
          diskId: loop.diskId,
          url: `${base}/to-https`,
          sha256: sha(image),
          format: "raw",
        });
        assert.deepEqual(ok, { diskId: loop.diskId, ok: true, writtenBytes: 6 * MIB, sha256: sha(image) });
        assert.ok(await Deno.stat(`/sys/block/${loop.kernelName}/${loop.kernelName}p2`));
        const bad = await h.client.call("disk.deploy", {
          diskId: loop.diskId,
          url: `${base}/image.raw`,
          sha256: "cd".repeat(32),
          format: "raw",
        });
        assert.ok(!bad.ok && bad.reason === "digest-mismatch" && bad.zeroedBootArea);
        assert.ok((await Deno.readFile(loop.backingFile)).subarray(0, MIB).every((b) => b === 0));
      } finally {
        await h.close();
        await loop.close();
      }
    });
  },
});

Deno.test({
  name: "a ramdisk helper's disk.deploy converts a compressed qcow2 while it streams; the kernel sees its partitions",
  ignore: skip !== undefined || !hasQemuImg(),
  async fn() {
    const image = await makeImage(8 * MIB);
    const dir = await Deno.makeTempDir({ prefix: "bcd-qcow2-" });
    let qcow2: Uint8Array;
    try {
      await Deno.writeFile(`${dir}/src.raw`, image);
      await qemuImg(dir, "convert", "-f", "raw", "-O", "qcow2", "-c", "src.raw", "img.qcow2");
      qcow2 = await Deno.readFile(`${dir}/img.qcow2`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
    await withServer(image, async (base, fetcher) => {
      const loop = await makeLoopDisk(16 * MIB, { partscan: true });
      await Deno.writeFile(loop.backingFile, new Uint8Array(16 * MIB).fill(0xee));
      const deploys = new DiskDeploys({ guard: new DiskGuard({ dev: loop.devRoot }), fetch: fetcher });
      const h = await startTestHelper({ role: "ramdisk", deploys });
      try {
        const ok = await h.client.call("disk.deploy", {
          diskId: loop.diskId,
          url: `${base}/image.qcow2`,
          sha256: sha(qcow2),
          format: "qcow2",
        });
        assert.deepEqual(ok, { diskId: loop.diskId, ok: true, writtenBytes: 8 * MIB, sha256: sha(qcow2) });
        const disk = await Deno.readFile(loop.backingFile);
        assert.equal(sha(disk.subarray(0, 8 * MIB)), sha(image), "the disk holds the image qcow2 carried");
        assert.ok(disk.subarray(8 * MIB).every((b) => b === 0xee), "nothing past the virtual size");
        assert.ok(await Deno.stat(`/sys/block/${loop.kernelName}/${loop.kernelName}p2`), "partitions visible");
        const bad = await h.client.call("disk.deploy", {
          diskId: loop.diskId,
          url: `${base}/image.raw`,
          sha256: sha(image),
          format: "qcow2",
        });
        assert.ok(!bad.ok && bad.reason === "malformed" && !bad.zeroedBootArea, "a raw image named qcow2 is refused");
      } finally {
        await h.close();
        await loop.close();
      }
    }, { "/image.qcow2": qcow2 });
  },
});

/** A GPT image of `size` whose one partition (from 1 MiB to the end) holds an ext4 filesystem with a file in it. */
async function makeExtImage(size: number): Promise<Uint8Array> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-ext-image-" });
  try {
    const img = `${dir}/disk.raw`;
    await Deno.writeFile(img, new Uint8Array(size));
    const sf = new Deno.Command("sfdisk", { args: ["-q", img], stdin: "piped", stdout: "null", stderr: "piped" })
      .spawn();
    const w = sf.stdin.getWriter();
    await w.write(new TextEncoder().encode("label: gpt\nstart=2048\n"));
    await w.close();
    if (!(await sf.output()).success) throw new Error("sfdisk failed");
    const fsKib = (size - 2 * MIB) / 1024; // up to GPT's backup at the end
    const mk = await new Deno.Command("mkfs.ext4", {
      args: ["-q", "-F", "-E", `offset=${MIB}`, img, `${fsKib}k`],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!mk.success) throw new Error(`mkfs.ext4: ${new TextDecoder().decode(mk.stderr)}`);
    return await Deno.readFile(img);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function tool(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped", env: { MTOOLS_SKIP_CHECK: "1" } })
    .output();
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}

Deno.test({
  name: "disk.deploy with growRoot and a config drive: ext4 grown to the disk, a CIDATA vfat partition after it",
  ignore: skip !== undefined,
  async fn() {
    const image = await makeExtImage(24 * MIB);
    await withServer(image, async (base, fetcher) => {
      const loop = await makeLoopDisk(96 * MIB, { partscan: true });
      const deploys = new DiskDeploys({ guard: new DiskGuard({ dev: loop.devRoot }), fetch: fetcher });
      const h = await startTestHelper({ role: "ramdisk", deploys });
      try {
        const userData = "#cloud-config\nhostname: deployed\n";
        const ok = await h.client.call("disk.deploy", {
          diskId: loop.diskId,
          url: `${base}/image.raw`,
          sha256: sha(image),
          format: "raw",
          growRoot: true,
          configDrive: { metaData: "instance-id: i-42\n", userData: btoa(userData), networkConfig: "version: 2\n" },
        });
        assert.ok(ok.ok, JSON.stringify(ok));
        assert.deepEqual(ok.grown, { partition: 1, sizeBytes: (79 - 1) * MIB, filesystem: "ext", resized: true });
        assert.equal(ok.configDrivePartition, 2);
        const p1 = `/dev/${loop.kernelName}p1`;
        const p2 = `/dev/${loop.kernelName}p2`;
        const sb = await tool("dumpe2fs", ["-h", p1]);
        const blocks = Number(/Block count:\s+(\d+)/.exec(sb)![1]);
        const bsize = Number(/Block size:\s+(\d+)/.exec(sb)![1]);
        assert.equal(blocks * bsize, 78 * MIB, "the filesystem fills the grown partition");
        await tool("e2fsck", ["-n", "-f", p1]);
        assert.match(await tool("blkid", ["-o", "value", "-s", "LABEL", p2]), /^CIDATA$/m);
        assert.equal(await tool("mtype", ["-i", p2, "::user-data"]), userData);
        assert.equal(await tool("mtype", ["-i", p2, "::meta-data"]), "instance-id: i-42\n");
        assert.equal(await tool("mtype", ["-i", p2, "::network-config"]), "version: 2\n");
      } finally {
        await h.close();
        await loop.close();
      }
    });
  },
});
