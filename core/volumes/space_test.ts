import assert from "node:assert/strict";
import { reserveBytes, spaceRefusal, volumeStorage } from "./space.ts";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

Deno.test("volume_storage: one row per field of the seed's table", async (t) => {
  // A 100 GiB filesystem with 60 GiB available; two volumes: 10 GiB with 3 GiB written, 4 GiB with nothing written.
  const s = volumeStorage({ totalBytes: 100 * GiB, availableBytes: 60 * GiB }, [
    { sizeBytes: 10 * GiB, allocatedBytes: 3 * GiB },
    { sizeBytes: 4 * GiB, allocatedBytes: 0 },
  ]);
  const rows: [string, number, number][] = [
    ["total_bytes: the data directory's filesystem", s.totalBytes, 100 * GiB],
    ["available_bytes: its statfs Bavail", s.availableBytes, 60 * GiB],
    ["reserved_bytes: kept from volumes, 5% of the total, at least 2 GiB", s.reservedBytes, 5 * GiB],
    ["committed_bytes: the sum of every volume's size", s.committedBytes, 14 * GiB],
    ["outstanding_bytes: the sum of every volume's unwritten (sparse) space", s.outstandingBytes, 11 * GiB],
  ];
  for (const [name, got, want] of rows) await t.step(name, () => assert.equal(got, want));
});

Deno.test("the reserve is 5% of the filesystem, at least 2 GiB", async (t) => {
  const rows: [string, number, number][] = [
    ["a small filesystem keeps the 2 GiB floor", 10 * GiB, 2 * GiB],
    ["exactly 40 GiB: 5% is the floor", 40 * GiB, 2 * GiB],
    ["a large filesystem keeps 5%", 1000 * GiB, 50 * GiB],
  ];
  for (const [name, total, want] of rows) await t.step(name, () => assert.equal(reserveBytes(total), want));
});

Deno.test("the space rule: a new volume or a growth fits in available less reserve less unwritten space", async (t) => {
  // 100 GiB filesystem, 20 GiB available, 5 GiB reserved, 10 GiB promised: 5 GiB can still be promised.
  const s = volumeStorage({ totalBytes: 100 * GiB, availableBytes: 20 * GiB }, [
    { sizeBytes: 12 * GiB, allocatedBytes: 2 * GiB },
  ]);
  const rows: [string, number, string | undefined][] = [
    ["a volume of exactly what can be promised fits", 5 * GiB, undefined],
    ["a smaller growth fits", 512 * MiB, undefined],
    [
      "one byte more is refused with the seed's message",
      5 * GiB + 1,
      "volume v: 5121 MiB needed, 5120 MiB can still be promised to volumes on this host (20480 MiB free, " +
      "5120 MiB reserved, 10240 MiB promised to volumes' unwritten space)",
    ],
  ];
  for (const [name, need, want] of rows) await t.step(name, () => assert.equal(spaceRefusal("v", need, s), want));
  await t.step(
    "when the promises already exceed what is free, nothing can be promised (never a negative figure)",
    () => {
      const over = volumeStorage({ totalBytes: 100 * GiB, availableBytes: 8 * GiB }, [{
        sizeBytes: 20 * GiB,
        allocatedBytes: 0,
      }]);
      assert.equal(
        spaceRefusal("w", 512, over),
        "volume w: 1 MiB needed, 0 MiB can still be promised to volumes on this host (8192 MiB free, 5120 MiB " +
          "reserved, 20480 MiB promised to volumes' unwritten space)",
      );
    },
  );
  await t.step("a fully written volume promises nothing more", () => {
    const full = volumeStorage({ totalBytes: 100 * GiB, availableBytes: 20 * GiB }, [
      { sizeBytes: 12 * GiB, allocatedBytes: 12 * GiB },
    ]);
    assert.equal(spaceRefusal("v", 15 * GiB, full), undefined);
  });
});
