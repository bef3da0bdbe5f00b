import assert from "node:assert/strict";
import { VolumeKeeper } from "./keeper.ts";
import { MemoryVolumeStore } from "./store.ts";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

Deno.test("VolumeKeeper.prepare creates missing volumes and grows grown ones, never shrinks", async () => {
  const store = new MemoryVolumeStore();
  const k = new VolumeKeeper(store);
  const v1 = await k.prepare([{ id: "a", serial: "sa", size_bytes: 4 * MiB }, {
    id: "b",
    serial: "sb",
    size_bytes: MiB,
  }]);
  assert.deepEqual(v1.created, ["a", "b"]);
  assert.equal(v1.refused.size, 0);
  const v2 = await k.prepare([{ id: "a", serial: "sa", size_bytes: 8 * MiB }, {
    id: "b",
    serial: "sb",
    size_bytes: 512,
  }]);
  assert.deepEqual([...v2.grown], [["a", 8 * MiB]]);
  assert.equal(v2.refused.get("b")?.reason, "volume-shrink");
  assert.equal(store.volumes.get("b")?.sizeBytes, MiB, "a refused shrink keeps its size");
  assert.equal(v2.listed.get("b")?.sizeBytes, MiB);
});

Deno.test("VolumeKeeper.prepare refuses the grammar's bad values and a second entry of one id", async (t) => {
  const rows: [string, Record<string, unknown>, RegExp][] = [
    ["an id with a dot", { id: "a.b", serial: "s", size_bytes: 512 }, /volume id "a.b" is not 1 to 80/],
    ["an id of 81 characters", { id: "x".repeat(81), serial: "s", size_bytes: 512 }, /is not 1 to 80/],
    ["an uppercase serial", { id: "a", serial: "S", size_bytes: 512 }, /serial "S" is not 1 to 20 of \[a-z0-9-\]/],
    ["a serial of 21 characters", { id: "a", serial: "s".repeat(21), size_bytes: 512 }, /is not 1 to 20/],
    [
      "a size that is not whole sectors",
      { id: "a", serial: "s", size_bytes: 513 },
      /size 513 is not a positive multiple of 512/,
    ],
    ["a zero size", { id: "a", serial: "s", size_bytes: 0 }, /size 0/],
  ];
  for (const [name, spec, why] of rows) {
    await t.step(name, async () => {
      const store = new MemoryVolumeStore();
      const v = await new VolumeKeeper(store).prepare([spec]);
      const r = [...v.refused.values()][0];
      assert.equal(r?.reason, "invalid-volume");
      assert.match(r?.message ?? "", why);
      assert.equal(store.volumes.size, 0);
    });
  }
  await t.step("an id listed twice: the first entry stands", async () => {
    const store = new MemoryVolumeStore();
    const v = await new VolumeKeeper(store).prepare([
      { id: "a", serial: "s", size_bytes: 512 },
      { id: "a", serial: "t", size_bytes: 1024 },
    ]);
    assert.equal(store.volumes.get("a")?.sizeBytes, 512);
    assert.equal(v.listed.get("a")?.serial, "s");
  });
});

Deno.test("VolumeKeeper.prepare admits each volume against the figures left by the ones before it", async () => {
  // 100 GiB fs, 20 GiB available, 5 GiB reserve: 15 GiB can be promised.
  const store = new MemoryVolumeStore({ totalBytes: 100 * GiB, availableBytes: 20 * GiB });
  const k = new VolumeKeeper(store);
  const v = await k.prepare([
    { id: "a", serial: "s", size_bytes: 10 * GiB },
    { id: "b", serial: "s", size_bytes: 6 * GiB },
    { id: "c", serial: "s", size_bytes: 5 * GiB },
  ]);
  assert.deepEqual(v.created, ["a", "c"]);
  assert.equal(
    v.refused.get("b")?.message,
    "volume b: 6144 MiB needed, 5120 MiB can still be promised to volumes on this host (20480 MiB free, 5120 MiB " +
      "reserved, 10240 MiB promised to volumes' unwritten space)",
  );
  assert.equal(v.refused.get("b")?.reason, "volume-space");
  assert.deepEqual(k.storage(), {
    totalBytes: 100 * GiB,
    availableBytes: 20 * GiB,
    reservedBytes: 5 * GiB,
    committedBytes: 15 * GiB,
    outstandingBytes: 15 * GiB,
  });
  // A growth that does not fit is refused and keeps its size.
  const g = await k.prepare([{ id: "a", serial: "s", size_bytes: 11 * GiB }, {
    id: "c",
    serial: "s",
    size_bytes: 5 * GiB,
  }]);
  assert.equal(g.refused.get("a")?.reason, "volume-space");
  assert.match(g.refused.get("a")?.message ?? "", /^volume a: 1024 MiB needed, 0 MiB can still be promised/);
  assert.equal(store.volumes.get("a")?.sizeBytes, 10 * GiB);
});

Deno.test("VolumeKeeper.destroyUnlisted: punched and unlinked when unlisted, never while attached, open or refused", async () => {
  const store = new MemoryVolumeStore();
  const k = new VolumeKeeper(store);
  await k.prepare(["a", "b", "c", "d", "e"].map((id) => ({ id, serial: "s", size_bytes: MiB })));
  await k.prepare([{ id: "e", serial: "BAD", size_bytes: MiB }]);
  k.open.open("i1", [{ volumeId: "b", readOnly: false }]);
  const gone = await k.destroyUnlisted(new Set(["c"]));
  assert.deepEqual(gone, ["a", "d"]);
  assert.deepEqual(store.punched, ["a", "d"]);
  assert.deepEqual([...store.volumes.keys()].sort(), ["b", "c", "e"]);
  k.open.close("i1");
  assert.deepEqual(await k.destroyUnlisted(new Set()), ["b", "c"]);
  assert.equal(k.storage()?.committedBytes, MiB);
});
