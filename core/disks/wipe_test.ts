import assert from "node:assert/strict";
import { FakeWipeDevice } from "./fake_wipe_device.ts";
import { SAMPLE_BLOCKS, sampleRegions, wipeDisk, WipeError, wipeLadder, type WipeProgress } from "./wipe.ts";
import type { DeviceMethod, WipeMethod } from "./wipe_device.ts";

const MIB = 1024 * 1024;

function dirty(size = 4 * MIB, o: Omit<ConstructorParameters<typeof FakeWipeDevice>[0], "sizeBytes"> = {}) {
  const dev = new FakeWipeDevice({ sizeBytes: size, ...o });
  crypto.getRandomValues(dev.bytes.subarray(0, 65536));
  dev.bytes.fill(0xa5, 65536);
  return dev;
}

Deno.test("wipeLadder() offers the device's own methods strongest first, then the asked overwrite", async (t) => {
  const rows: [string, DeviceMethod[], "zero" | "random" | undefined, WipeMethod[]][] = [
    ["an NVMe disk", ["nvme-format", "nvme-sanitize"], undefined, ["nvme-sanitize", "nvme-format", "overwrite-zero"]],
    ["an ATA disk with discard", ["blkdiscard", "ata-secure-erase"], undefined, [
      "ata-secure-erase",
      "blkdiscard",
      "overwrite-zero",
    ]],
    ["a loop disk", ["blkdiscard-secure", "blkdiscard"], "random", [
      "blkdiscard-secure",
      "blkdiscard",
      "overwrite-random",
    ]],
    ["a disk with nothing of its own", [], undefined, ["overwrite-zero"]],
  ];
  for (const [name, offered, pattern, want] of rows) {
    await t.step(name, () => assert.deepEqual(wipeLadder(offered, { pattern }), want));
  }
  await t.step("`only` is the one rung", () => {
    assert.deepEqual(wipeLadder(["blkdiscard"], { only: "overwrite-random" }), ["overwrite-random"]);
  });
});

Deno.test("wipeDisk() stops at the first rung that verifies and records the ones that failed before it", async () => {
  const dev = dirty(4 * MIB, { methods: ["blkdiscard-secure", "blkdiscard"], failing: ["blkdiscard-secure"] });
  const out = await wipeDisk(dev, { verify: "all", chunkBytes: MIB });
  assert.equal(out.method, "blkdiscard");
  assert.deepEqual(out.attempts.map((a) => [a.method, a.outcome]), [
    ["blkdiscard-secure", "failed"],
    ["blkdiscard", "verified"],
  ]);
  assert.equal(out.verifiedBytes, 4 * MIB);
  assert.ok(dev.bytes.every((b) => b === 0));
});

Deno.test("wipeDisk() falls through to the overwrite when a discard does not read back as zeros", async () => {
  const dev = dirty(4 * MIB, { methods: ["blkdiscard"], discardKeepsData: true });
  const out = await wipeDisk(dev, { verify: "sample" });
  assert.equal(out.method, "overwrite-zero");
  assert.equal(out.attempts[0]?.outcome, "mismatch");
  assert.equal(out.attempts[0]?.mismatchAt, 0);
  assert.ok(dev.bytes.every((b) => b === 0));
});

Deno.test("wipeDisk() verifies a random pass by regenerating its keystream", async () => {
  const dev = dirty(3 * MIB);
  const out = await wipeDisk(dev, { pattern: "random", verify: "all", chunkBytes: MIB });
  assert.equal(out.method, "overwrite-random");
  assert.equal(out.verifiedBytes, 3 * MIB);
  assert.ok(dev.bytes.some((b) => b !== 0) && !dev.bytes.subarray(65536).every((b) => b === 0xa5));
});

Deno.test("wipeDisk() detects a block corrupted between the wipe and the verification", async (t) => {
  for (const pattern of ["zero", "random"] as const) {
    await t.step(`full verification of a ${pattern} pass`, async () => {
      const dev = dirty(4 * MIB);
      await assert.rejects(
        wipeDisk(dev, { pattern, verify: "all", chunkBytes: MIB }, {
          afterErase: () => Promise.resolve(void dev.bytes.fill(0x5a, 3 * MIB + 4096, 3 * MIB + 8192)),
        }),
        (e) => e instanceof WipeError && e.reason === "verify-failed" && e.attempts[0]?.mismatchAt === 3 * MIB + 4096,
      );
    });
  }
  await t.step("a sampled verification always reads the first MiB", async () => {
    const dev = dirty(8 * MIB);
    await assert.rejects(
      wipeDisk(dev, { verify: "sample" }, { afterErase: () => Promise.resolve(void (dev.bytes[4097] = 1)) }),
      (e) =>
        e instanceof WipeError && e.attempts.length === 1 && e.attempts[0]!.mismatchAt === 4097 &&
        /byte 4097 does not read back as zeros/.test(e.message),
    );
  });
});

Deno.test("wipeDisk() reports progress chunk by chunk, stops between chunks when cancelled and flushes what it wrote", async () => {
  const dev = dirty(8 * MIB);
  const ctl = new AbortController();
  const seen: WipeProgress[] = [];
  await assert.rejects(
    wipeDisk(dev, { chunkBytes: MIB }, {
      signal: ctl.signal,
      onProgress: (p) => {
        seen.push(p);
        if (p.doneBytes === 3 * MIB) ctl.abort();
      },
    }),
    (e) => e instanceof WipeError && e.reason === "cancelled",
  );
  assert.deepEqual(seen.map((p) => [p.phase, p.doneBytes]), [["write", MIB], ["write", 2 * MIB], ["write", 3 * MIB]]);
  assert.ok(dev.bytes.subarray(0, 3 * MIB).every((b) => b === 0), "the chunks written before the cancel are zeros");
  assert.ok(dev.bytes.subarray(3 * MIB).every((b) => b === 0xa5), "nothing was written after the cancel");
  assert.equal(dev.flushes, 1, "the chunks written before the cancel are flushed to the device before it answers");
});

Deno.test("sampleRegions() reads the first and last MiB and at most SAMPLE_BLOCKS blocks, all inside the disk", () => {
  const size = 64 * MIB;
  let x = 0;
  const regions = sampleRegions(size, () => (x = (x + 0.6180339887) % 1));
  assert.deepEqual(regions.slice(0, 2), [{ offset: 0, length: MIB }, { offset: size - MIB, length: MIB }]);
  assert.ok(regions.length <= 2 + SAMPLE_BLOCKS && regions.length > 2 + SAMPLE_BLOCKS / 2);
  for (const r of regions) assert.ok(r.offset >= 0 && r.offset + r.length <= size && r.offset % 4096 === 0);
  assert.deepEqual(sampleRegions(MIB, Math.random), [{ offset: 0, length: MIB }]);
});
