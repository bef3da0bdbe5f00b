/**
 * `disk.wipe`, `disk.wipe_status` and `disk.wipe_cancel` through a ramdisk-role helper on its socket, over real loop
 * disks: the agent's by-id name in, root's check and wipe, the outcome or the refusal out as data.
 *
 * @module
 */
import assert from "node:assert/strict";
import { HelperError } from "../../core/helper/mod.ts";
import { startTestHelper } from "../helper/helper_testing.ts";
import { BlockWipeDevice } from "./block_wipe_device.ts";
import { DiskGuard } from "./disk_guard.ts";
import { DiskWipes } from "./disk_wipes.ts";
import { DiskDeploys } from "./disk_deploys.ts";
import { DiskClaims } from "./disk_claims.ts";
import { loopSkipReason, makeLoopDisk, mustRun } from "../../fixtures/disks/loop_disk.ts";

const MIB = 1024 * 1024;
const skip = loopSkipReason();

Deno.test({
  name: "a ramdisk helper wipes a loop disk named by its by-id name and answers the attested outcome",
  ignore: skip !== undefined,
  async fn() {
    const loop = await makeLoopDisk(16 * MIB);
    const h = await startTestHelper({
      role: "ramdisk",
      disks: new DiskWipes({ guard: new DiskGuard({ dev: loop.devRoot }) }),
    });
    try {
      await Deno.writeFile(loop.backingFile, new Uint8Array(16 * MIB).fill(0x3c));
      const a = await h.client.call("disk.wipe", { diskId: loop.diskId, pattern: "zero", verify: "all" });
      assert.ok(a.ok, JSON.stringify(a));
      assert.equal(a.outcome.method, "blkdiscard");
      assert.equal(a.outcome.verifiedBytes, 16 * MIB);
      assert.deepEqual(a.outcome.attempts.map((x) => x.outcome), ["failed", "verified"]);
      assert.ok((await Deno.readFile(loop.backingFile)).every((b) => b === 0));
      assert.deepEqual(await h.client.call("disk.wipe_status", { diskId: loop.diskId }), { progress: null });
    } finally {
      await h.close();
      await loop.close();
    }
  },
});

Deno.test({
  name: "a ramdisk helper answers a mounted disk's refusal as data and leaves its bytes alone",
  ignore: skip !== undefined,
  async fn() {
    const loop = await makeLoopDisk(16 * MIB);
    const mnt = await Deno.makeTempDir({ prefix: "bcd-wipe-mnt-" });
    const h = await startTestHelper({
      role: "ramdisk",
      disks: new DiskWipes({ guard: new DiskGuard({ dev: loop.devRoot }) }),
    });
    try {
      await mustRun("mkfs.ext4", ["-q", "-F", loop.devicePath]);
      await mustRun("mount", [loop.devicePath, mnt]);
      try {
        await Deno.writeTextFile(`${mnt}/keep`, "still here");
        const a = await h.client.call("disk.wipe", { diskId: loop.diskId, pattern: "zero", verify: "sample" });
        assert.ok(!a.ok);
        assert.equal(a.reason, "mounted");
        assert.match(a.message, new RegExp(`mounted at ${mnt}`));
        assert.equal(await Deno.readTextFile(`${mnt}/keep`), "still here");
      } finally {
        await mustRun("umount", [mnt]);
      }
    } finally {
      await h.close();
      await Deno.remove(mnt, { recursive: true });
      await loop.close();
    }
  },
});

Deno.test({
  name:
    "disk.wipe_cancel stops a running wipe between chunks; disk.wipe_status shows it running; a second wipe is busy",
  ignore: skip !== undefined,
  async fn() {
    const loop = await makeLoopDisk(16 * MIB);
    let entered!: () => void;
    const inSecondChunk = new Promise<void>((r) => (entered = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const claims = new DiskClaims();
    const guard = new DiskGuard({ dev: loop.devRoot });
    const alias = `${loop.diskId}-alias`; // a second by-id name of the same disk, as wwn- and nvme- links are
    await Deno.symlink(loop.devicePath, `${loop.devRoot}/disk/by-id/${alias}`);
    const disks = new DiskWipes({
      guard,
      claims,
      async open(d) {
        const dev = await BlockWipeDevice.open(d.kernelName);
        let writes = 0;
        return {
          sizeBytes: dev.sizeBytes,
          methods: () => dev.methods(),
          erase: (m) => dev.erase(m),
          read: (o, n) => dev.read(o, n),
          flush: () => dev.flush(),
          close: () => dev.close(),
          async write(o, data) {
            if (++writes === 2) {
              entered();
              await gate;
            }
            await dev.write(o, data);
          },
        };
      },
    });
    const h = await startTestHelper({ role: "ramdisk", disks, deploys: new DiskDeploys({ guard, claims }) });
    try {
      await Deno.writeFile(loop.backingFile, new Uint8Array(16 * MIB).fill(0x3c));
      const running = h.client.call("disk.wipe", {
        diskId: loop.diskId,
        pattern: "zero",
        verify: "sample",
        only: "overwrite-zero",
      });
      await inSecondChunk;
      const st = await h.client.call("disk.wipe_status", { diskId: loop.diskId });
      assert.deepEqual(st.progress, {
        method: "overwrite-zero",
        phase: "write",
        doneBytes: 4 * MIB,
        totalBytes: 16 * MIB,
      });
      await assert.rejects(
        h.client.call("disk.wipe", { diskId: loop.diskId, pattern: "zero", verify: "sample" }),
        (e) => e instanceof HelperError && e.code === "busy",
      );
      await assert.rejects(
        h.client.call("disk.wipe", { diskId: alias, pattern: "zero", verify: "sample" }),
        (e) => e instanceof HelperError && e.code === "busy" && e.message.includes(`is being written by disk.wipe`),
        "the same disk under another by-id name is busy too",
      );
      await assert.rejects(
        h.client.call("disk.deploy", {
          diskId: alias,
          url: "https://127.0.0.1:1/x.raw",
          sha256: "ab".repeat(32),
          format: "raw",
        }),
        (e) => e instanceof HelperError && e.code === "busy",
        "a deploy does not write a disk a wipe is writing",
      );
      assert.deepEqual(await h.client.call("disk.wipe_cancel", { diskId: loop.diskId }), { cancelled: true });
      release();
      const a = await running;
      assert.ok(!a.ok);
      assert.equal(a.reason, "cancelled");
      const bytes = await Deno.readFile(loop.backingFile);
      assert.ok(bytes.subarray(0, 8 * MIB).every((b) => b === 0), "the chunk in flight when cancel came is finished");
      assert.ok(bytes.subarray(8 * MIB).every((b) => b === 0x3c), "no chunk is started after the cancel");
      assert.deepEqual(await h.client.call("disk.wipe_cancel", { diskId: loop.diskId }), { cancelled: false });
    } finally {
      release();
      await h.close();
      await loop.close();
    }
  },
});
