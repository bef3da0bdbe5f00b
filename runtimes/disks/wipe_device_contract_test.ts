/**
 * One contract for every {@link WipeDevice}: the in-memory fake and the real block device on a loop disk.
 *
 * @module
 */
import assert from "node:assert/strict";
import { DEVICE_METHODS, DeviceMethodFailed, type WipeDevice } from "../../core/disks/wipe_device.ts";
import { FakeWipeDevice } from "../../core/disks/fake_wipe_device.ts";
import { BlockWipeDevice } from "./block_wipe_device.ts";
import { loopSkipReason, makeLoopDisk } from "../../fixtures/disks/loop_disk.ts";

const SIZE = 8 * 1024 * 1024;

async function contract(t: Deno.TestContext, dev: WipeDevice): Promise<void> {
  await t.step("its size is whole sectors and its methods are ladder rungs", async () => {
    assert.deepEqual(dev.sizeBytes, SIZE);
    for (const m of await dev.methods()) assert.ok((DEVICE_METHODS as readonly string[]).includes(m), m);
  });
  await t.step("what is written reads back after a flush", async () => {
    const data = crypto.getRandomValues(new Uint8Array(65536));
    await dev.write(1024 * 1024, data);
    await dev.flush();
    assert.deepEqual(await dev.read(1024 * 1024, data.length), data);
  });
  await t.step("plain discard is offered and leaves the disk reading as zeros", async () => {
    assert.ok((await dev.methods()).includes("blkdiscard"));
    await dev.erase("blkdiscard");
    await dev.flush();
    assert.deepEqual(await dev.read(1024 * 1024, 65536), new Uint8Array(65536));
  });
  await t.step("a method the device does not offer fails as DeviceMethodFailed", async () => {
    await assert.rejects(dev.erase("nvme-format"), DeviceMethodFailed);
  });
  await t.step("secure discard on a device that cannot do it fails as DeviceMethodFailed", async () => {
    await assert.rejects(dev.erase("blkdiscard-secure"), DeviceMethodFailed);
  });
  await t.step("a read past the end is refused", async () => {
    await assert.rejects(dev.read(SIZE - 512, 1024), RangeError);
  });
}

Deno.test("WipeDevice contract: the in-memory fake", async (t) => {
  await contract(
    t,
    new FakeWipeDevice({
      sizeBytes: SIZE,
      methods: ["blkdiscard-secure", "blkdiscard"],
      failing: ["blkdiscard-secure"],
    }),
  );
});

const skip = loopSkipReason();
Deno.test({
  name: "WipeDevice contract: the real block device on a loop disk",
  ignore: skip !== undefined,
  async fn(t) {
    const loop = await makeLoopDisk(SIZE);
    try {
      const dev = await BlockWipeDevice.open(loop.kernelName);
      try {
        await contract(t, dev);
      } finally {
        dev.close();
      }
    } finally {
      await loop.close();
    }
  },
});
