/**
 * One contract for every {@link VolumeStore}: the memory fake (`store_test.ts`) and the real file store
 * (`runtimes/volumes/file_store_test.ts`) run it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { VolumeRefused, type VolumeStore } from "./store.ts";

/** What the contract needs besides the store: a way to write into a volume as a guest would. */
export interface StoreUnderTest {
  readonly store: VolumeStore;
  /** Writes `bytes` of data at the start of the volume. */
  write(id: string, bytes: number): Promise<void>;
}

const MiB = 1024 * 1024;

/** Runs the contract as steps of `t`. */
export async function volumeStoreContract(t: Deno.TestContext, make: () => Promise<StoreUnderTest>): Promise<void> {
  await t.step("a new volume is listed with its serial and size, sparse (nothing allocated)", async () => {
    const { store } = await make();
    await store.create("data-1", "ser-1", 64 * MiB);
    const [v] = await store.list();
    assert.deepEqual({ ...v, allocatedBytes: 0 }, {
      id: "data-1",
      serial: "ser-1",
      sizeBytes: 64 * MiB,
      allocatedBytes: 0,
    });
    assert.ok(v!.allocatedBytes < MiB, `a new volume allocated ${v!.allocatedBytes} bytes`);
  });
  await t.step("creating an existing volume is refused AlreadyExists and changes nothing", async () => {
    const { store } = await make();
    await store.create("v", "s", 4 * MiB);
    await assert.rejects(store.create("v", "t", 8 * MiB), Deno.errors.AlreadyExists);
    assert.deepEqual((await store.list()).map((v) => [v.serial, v.sizeBytes]), [["s", 4 * MiB]]);
  });
  await t.step(
    "a volume grows by truncation, never shrinks (volume-shrink), and the same size is nothing",
    async () => {
      const { store } = await make();
      await store.create("v", "s", 4 * MiB);
      await store.grow("v", 8 * MiB);
      await store.grow("v", 8 * MiB);
      await assert.rejects(store.grow("v", 4 * MiB), VolumeRefused);
      assert.equal((await store.list())[0]!.sizeBytes, 8 * MiB);
    },
  );
  await t.step("a shrink's refusal carries volume-shrink and both sizes", async () => {
    const { store } = await make();
    await store.create("v", "s", 8 * MiB);
    try {
      await store.grow("v", 4 * MiB);
      assert.fail("a shrink was not refused");
    } catch (e) {
      assert.ok(e instanceof VolumeRefused);
      assert.equal(e.reason, "volume-shrink");
      assert.match(e.message, new RegExp(`${8 * MiB}.*${4 * MiB}`));
    }
  });
  await t.step("written data is allocated; the unwritten rest is not", async () => {
    const u = await make();
    await u.store.create("v", "s", 16 * MiB);
    await u.write("v", 2 * MiB);
    const [v] = await u.store.list();
    assert.ok(v!.allocatedBytes >= 2 * MiB && v!.allocatedBytes < 16 * MiB, `allocated ${v!.allocatedBytes}`);
  });
  await t.step("a new serial is recorded", async () => {
    const { store } = await make();
    await store.create("v", "s", MiB);
    await store.setSerial("v", "t");
    assert.equal((await store.list())[0]!.serial, "t");
  });
  await t.step("destroy removes the volume; a missing one is nothing to do", async () => {
    const u = await make();
    await u.store.create("a", "s", MiB);
    await u.store.create("b", "s", MiB);
    await u.write("a", MiB / 2);
    await u.store.destroy("a");
    await u.store.destroy("a");
    assert.deepEqual((await u.store.list()).map((v) => v.id), ["b"]);
  });
  await t.step("the filesystem's figures are positive and available is at most the total", async () => {
    const { store } = await make();
    const f = await store.fs();
    assert.ok(f.totalBytes > 0 && f.availableBytes >= 0 && f.availableBytes <= f.totalBytes, JSON.stringify(f));
  });
}
