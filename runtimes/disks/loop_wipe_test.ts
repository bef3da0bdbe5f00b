/**
 * `disk.wipe`'s real path on real loop disks: `DiskGuard` resolving a by-id name and refusing, `BlockWipeDevice`
 * under `wipeDisk`. Each test attaches its own sparse loop disk (unique by-id name in its own temp dir) and detaches it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { wipeDisk, WipeError } from "../../core/disks/wipe.ts";
import { BlockWipeDevice } from "./block_wipe_device.ts";
import { DiskGuard, DiskRefused } from "./disk_guard.ts";
import { type LoopDisk, loopSkipReason, makeLoopDisk, mustRun } from "../../fixtures/disks/loop_disk.ts";

const MIB = 1024 * 1024;
const skip = loopSkipReason();

async function withLoop(size: number, f: (loop: LoopDisk, dev: BlockWipeDevice) => Promise<void>): Promise<void> {
  const loop = await makeLoopDisk(size);
  try {
    await Deno.writeFile(loop.backingFile, new Uint8Array(size).fill(0xa5));
    const checked = await new DiskGuard({ dev: loop.devRoot }).check(loop.diskId);
    assert.equal(checked.kernelName, loop.kernelName);
    const dev = await BlockWipeDevice.open(checked.kernelName);
    try {
      await f(loop, dev);
    } finally {
      dev.close();
    }
  } finally {
    await loop.close();
  }
}

async function readBacking(loop: LoopDisk): Promise<Uint8Array> {
  return await Deno.readFile(loop.backingFile);
}

async function corruptThroughDevice(loop: LoopDisk, offset: number): Promise<void> {
  const f = await Deno.open(loop.devicePath, { write: true });
  try {
    await f.seek(offset, Deno.SeekMode.Start);
    await f.write(new Uint8Array(4096).fill(0x77));
    await f.sync();
  } finally {
    f.close();
  }
}

Deno.test({
  name: "disk.wipe on a loop disk: secure discard is refused by the device, plain discard holds and verifies",
  ignore: skip !== undefined,
  async fn() {
    await withLoop(16 * MIB, async (loop, dev) => {
      const out = await wipeDisk(dev, { verify: "all" });
      assert.deepEqual(out.attempts.map((a) => [a.method, a.outcome]), [
        ["blkdiscard-secure", "failed"],
        ["blkdiscard", "verified"],
      ]);
      assert.match(out.attempts[0]!.message!, /blkdiscard exited/);
      assert.equal(out.verifiedBytes, 16 * MIB);
      assert.ok((await readBacking(loop)).every((b) => b === 0));
    });
  },
});

Deno.test({
  name: "disk.wipe on a loop disk: the zero and the random overwrite passes verify against the device",
  ignore: skip !== undefined,
  async fn(t) {
    for (const pattern of ["zero", "random"] as const) {
      await t.step(pattern, async () => {
        await withLoop(8 * MIB, async (loop, dev) => {
          const only = pattern === "zero" ? "overwrite-zero" : "overwrite-random";
          const out = await wipeDisk(dev, { only, verify: "all", chunkBytes: MIB });
          assert.equal(out.method, only);
          const bytes = await readBacking(loop);
          if (pattern === "zero") assert.ok(bytes.every((b) => b === 0));
          else assert.ok(bytes.filter((b) => b === 0xa5).length < bytes.length / 100, "the old pattern is gone");
        });
      });
    }
  },
});

Deno.test({
  name: "disk.wipe on a loop disk: a block corrupted through the device between wipe and verify is detected",
  ignore: skip !== undefined,
  async fn(t) {
    await t.step("full verification after the overwrite fails the wipe at that block", async () => {
      await withLoop(8 * MIB, async (loop, dev) => {
        await assert.rejects(
          wipeDisk(dev, { only: "overwrite-zero", verify: "all", chunkBytes: MIB }, {
            afterErase: () => corruptThroughDevice(loop, 5 * MIB),
          }),
          (e) => e instanceof WipeError && e.reason === "verify-failed" && e.attempts[0]!.mismatchAt === 5 * MIB,
        );
      });
    });
    await t.step("a corrupted discard is caught by the sample, and the overwrite after it verifies", async () => {
      await withLoop(8 * MIB, async (loop, dev) => {
        let corrupted = false;
        const out = await wipeDisk(dev, { verify: "sample" }, {
          afterErase: async (m) => {
            if (m === "blkdiscard" && !corrupted) {
              corrupted = true;
              await corruptThroughDevice(loop, 8192);
            }
          },
        });
        assert.deepEqual(out.attempts.map((a) => [a.method, a.outcome, a.mismatchAt]), [
          ["blkdiscard-secure", "failed", undefined],
          ["blkdiscard", "mismatch", 8192],
          ["overwrite-zero", "verified", undefined],
        ]);
      });
    });
  },
});

Deno.test({
  name: "disk.wipe on a loop disk: cancel stops between chunks and leaves the rest unwritten",
  ignore: skip !== undefined,
  async fn() {
    await withLoop(8 * MIB, async (loop, dev) => {
      const ctl = new AbortController();
      await assert.rejects(
        wipeDisk(dev, { only: "overwrite-zero", chunkBytes: MIB }, {
          signal: ctl.signal,
          onProgress: (p) => p.doneBytes === 2 * MIB && ctl.abort(),
        }),
        (e) => e instanceof WipeError && e.reason === "cancelled",
      );
      await dev.flush();
      const bytes = await readBacking(loop);
      assert.ok(bytes.subarray(0, 2 * MIB).every((b) => b === 0));
      assert.ok(bytes.subarray(2 * MIB).every((b) => b === 0xa5));
    });
  },
});

Deno.test({
  name: "DiskGuard refuses a loop disk that is mounted, mounted at /, or active swap; an unknown id; a path",
  ignore: skip !== undefined,
  async fn(t) {
    const loop = await makeLoopDisk(16 * MIB);
    const mnt = await Deno.makeTempDir({ prefix: "bcd-wipe-mnt-" });
    try {
      const guard = new DiskGuard({ dev: loop.devRoot });
      await t.step("mounted", async () => {
        await mustRun("mkfs.ext4", ["-q", "-F", loop.devicePath]);
        await mustRun("mount", [loop.devicePath, mnt]);
        try {
          await assert.rejects(
            guard.check(loop.diskId),
            (e) => e instanceof DiskRefused && e.reason === "mounted" && e.message.includes(mnt),
          );
        } finally {
          await mustRun("umount", [mnt]);
        }
        assert.equal((await guard.check(loop.diskId)).kernelName, loop.kernelName, "free again once unmounted");
      });
      await t.step("the disk mounted at / (where the agent runs from)", async () => {
        const proc = await _fakeProc(
          `36 1 ${await _devNumber(loop)} / / rw,relatime - ext4 ${loop.devicePath} rw\n`,
          "",
        );
        try {
          await assert.rejects(
            new DiskGuard({ dev: loop.devRoot, proc }).check(loop.diskId),
            (e) => e instanceof DiskRefused && e.reason === "ramdisk-disk",
          );
        } finally {
          await Deno.remove(proc, { recursive: true });
        }
      });
      await t.step("active swap", async () => {
        const swaps = `Filename Type Size Used Priority\n${loop.devicePath} partition 16380 0 -2\n`;
        const proc = await _fakeProc("", swaps);
        try {
          await assert.rejects(
            new DiskGuard({ dev: loop.devRoot, proc }).check(loop.diskId),
            (e) => e instanceof DiskRefused && e.reason === "swap",
          );
        } finally {
          await Deno.remove(proc, { recursive: true });
        }
      });
      await t.step("unknown", async () => {
        await assert.rejects(
          guard.check("bcd-test-no-such-disk"),
          (e) => e instanceof DiskRefused && e.reason === "unknown-disk",
        );
      });
      await t.step("a path or kernel name is not an id", async () => {
        for (const id of ["../../sda", "/dev/sda", ".hidden", ""]) {
          await assert.rejects(guard.check(id), (e) => e instanceof DiskRefused && e.reason === "unknown-disk", id);
        }
      });
    } finally {
      await Deno.remove(mnt, { recursive: true });
      await loop.close();
    }
  },
});

/** A `/proc` stand-in holding only `self/mountinfo` and `swaps` (the guard's other reads are of the real /sys). */
async function _fakeProc(mountinfo: string, swaps: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-fake-proc-" });
  await Deno.mkdir(`${dir}/self`);
  await Deno.writeTextFile(`${dir}/self/mountinfo`, mountinfo);
  await Deno.writeTextFile(`${dir}/swaps`, swaps);
  return dir;
}

async function _devNumber(loop: LoopDisk): Promise<string> {
  return (await Deno.readTextFile(`/sys/block/${loop.kernelName}/dev`)).trim();
}

const dmSkip = skip ?? (_exists("/dev/mapper/control") ? undefined : "no /dev/mapper/control (device-mapper absent)");
if (dmSkip !== undefined && skip === undefined) console.error(`skipping the device-mapper holder test: ${dmSkip}`);

function _exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

Deno.test({
  name: "DiskGuard refuses a loop disk held by a device-mapper target, until the target is removed",
  ignore: dmSkip !== undefined,
  async fn() {
    const loop = await makeLoopDisk(8 * MIB);
    const name = `bcd-test-${crypto.randomUUID()}`;
    try {
      await mustRun("dmsetup", ["create", name, "--table", `0 ${(8 * MIB) / 512} linear ${loop.devicePath} 0`]);
      try {
        await assert.rejects(
          new DiskGuard({ dev: loop.devRoot }).check(loop.diskId),
          (e) => e instanceof DiskRefused && e.reason === "in-use" && /held by dm-\d+/.test(e.message),
        );
      } finally {
        await mustRun("dmsetup", ["remove", name]);
      }
      assert.equal((await new DiskGuard({ dev: loop.devRoot }).check(loop.diskId)).kernelName, loop.kernelName);
    } finally {
      await loop.close();
    }
  },
});
