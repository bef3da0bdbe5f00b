/**
 * The root growth's own partition-table rewrite, checked by the real `sfdisk` (`--json` reads the result back,
 * `--verify` checks GPT's CRCs and the backup at the disk's end).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { FakeWipeDevice } from "./fake_wipe_device.ts";
import { GrowError, growLastPartition, type RewriteOptions, rewritePartitions } from "./grow_partition.ts";

const MIB = 1024 * 1024;

function hasSfdisk(): boolean {
  try {
    return new Deno.Command("sfdisk", { args: ["--version"], stdout: "null", stderr: "null" }).outputSync().success;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}
const noSfdisk = hasSfdisk() ? undefined : "sfdisk is not installed (util-linux fdisk)";
if (noSfdisk) console.error(`skipping partition growth tests: ${noSfdisk}`);

async function sfdisk(args: string[], stdin?: string): Promise<string> {
  const p = new Deno.Command("sfdisk", { args, stdin: "piped", stdout: "piped", stderr: "piped" }).spawn();
  const w = p.stdin.getWriter();
  if (stdin !== undefined) await w.write(new TextEncoder().encode(stdin));
  await w.close();
  const out = await p.output();
  if (!out.success) throw new Error(`sfdisk ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}

interface _Part {
  start: number;
  size: number;
}

/** A disk of `diskBytes` holding an image of `imageBytes` partitioned by sfdisk with `script`. */
async function imageOnDisk(dir: string, imageBytes: number, diskBytes: number, script: string) {
  const img = join(dir, `${crypto.randomUUID()}.raw`);
  await Deno.writeFile(img, new Uint8Array(imageBytes));
  await sfdisk(["-q", img], script);
  const dev = new FakeWipeDevice({ sizeBytes: diskBytes });
  dev.bytes.set(await Deno.readFile(img));
  return dev;
}

async function readBack(dir: string, dev: FakeWipeDevice): Promise<{ label: string; partitions: _Part[] }> {
  const file = join(dir, `${crypto.randomUUID()}.disk`);
  await Deno.writeFile(file, dev.bytes);
  await sfdisk(["--verify", file]);
  return JSON.parse(await sfdisk(["--json", file])).partitiontable;
}

async function withDir(f: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-grow-" });
  try {
    await f(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  name: "growLastPartition moves GPT's backup to the disk's end and grows the last partition to it (sfdisk agrees)",
  ignore: noSfdisk !== undefined,
  async fn() {
    await withDir(async (dir) => {
      const dev = await imageOnDisk(dir, 8 * MIB, 64 * MIB, "label: gpt\nstart=2048, size=2048, type=U\nstart=4096\n");
      const image = new FakeWipeDevice({ sizeBytes: 8 * MIB });
      image.bytes.set(dev.bytes.subarray(0, 8 * MIB));
      const before = (await readBack(dir, image)).partitions;
      const out = await growLastPartition(dev);
      assert.deepEqual(out, {
        table: "gpt",
        partition: 2,
        startSector: 4096,
        oldSectors: before[1]!.size,
        newSectors: 63 * 2048 - 4096,
      });
      const after = await readBack(dir, dev);
      assert.equal(after.label, "gpt");
      assert.deepEqual(after.partitions.map((p) => [p.start, p.size]), [[2048, 2048], [4096, 63 * 2048 - 4096]]);
      assert.ok(
        dev.bytes.subarray(8 * MIB - 512, 8 * MIB).every((b) => b === 0),
        "the image's old backup is gone",
      );
    });
  },
});

Deno.test({
  name: "rewritePartitions adds a config drive partition at the end, and grows a dos table's last primary partition",
  ignore: noSfdisk !== undefined,
  async fn(t) {
    await withDir(async (dir) => {
      await t.step("gpt: grown, then a 16 MiB cidata partition", async () => {
        const dev = await imageOnDisk(dir, 8 * MIB, 64 * MIB, "label: gpt\nstart=2048\n");
        const out = await rewritePartitions(dev, { growLast: true, tailBytes: 16 * MIB });
        assert.equal(out.grown!.newSectors, 46 * 2048, "ends on the MiB boundary before the config drive");
        assert.deepEqual(out.added, { table: "gpt", partition: 2, startSector: 47 * 2048, sectors: 16 * 2048 });
        const after = await readBack(dir, dev);
        assert.deepEqual(after.partitions.map((p) => [p.start, p.size]), [[2048, 46 * 2048], [47 * 2048, 16 * 2048]]);
        assert.equal((after.partitions[1] as unknown as { name: string }).name, "cidata");
      });
      await t.step("dos: not grown, a config drive after it", async () => {
        const dev = await imageOnDisk(dir, 8 * MIB, 64 * MIB, "label: dos\nstart=2048\n");
        const out = await rewritePartitions(dev, { tailBytes: 16 * MIB });
        assert.equal(out.grown, undefined);
        assert.deepEqual(out.added, { table: "dos", partition: 2, startSector: 48 * 2048, sectors: 16 * 2048 });
        const after = await readBack(dir, dev);
        assert.deepEqual(after.partitions.map((p) => [p.start, p.size]), [[2048, 14336], [48 * 2048, 16 * 2048]]);
      });
      await t.step("dos", async () => {
        const dev = await imageOnDisk(dir, 8 * MIB, 64 * MIB, "label: dos\nstart=2048, size=2048\nstart=4096\n");
        const out = await growLastPartition(dev);
        assert.deepEqual(out, { table: "dos", partition: 2, startSector: 4096, oldSectors: 12288, newSectors: 126976 });
        const after = await readBack(dir, dev);
        assert.deepEqual(after.partitions.map((p) => [p.start, p.size]), [[2048, 2048], [4096, 126976]]);
      });
    });
  },
});

Deno.test({
  name: "rewritePartitions refuses a missing or corrupt table, an extended partition last, no room, writing nothing",
  ignore: noSfdisk !== undefined,
  async fn(t) {
    await withDir(async (dir) => {
      const grow = { growLast: true };
      const rows: [string, () => Promise<FakeWipeDevice>, RewriteOptions, string][] = [
        ["no table", () => Promise.resolve(new FakeWipeDevice({ sizeBytes: 16 * MIB })), grow, "no-partition-table"],
        [
          "a GPT header with a wrong CRC32",
          async () => {
            const d = await imageOnDisk(dir, 4 * MIB, 16 * MIB, "label: gpt\nstart=2048\n");
            d.bytes[512 + 60]! ^= 0xff; // the disk GUID
            return d;
          },
          grow,
          "partition-table",
        ],
        [
          "a GPT entry array with a wrong CRC32",
          async () => {
            const d = await imageOnDisk(dir, 4 * MIB, 16 * MIB, "label: gpt\nstart=2048\n");
            d.bytes[1024 + 56]! ^= 0xff; // the first entry's name
            return d;
          },
          grow,
          "partition-table",
        ],
        [
          "an extended partition last",
          () => imageOnDisk(dir, 4 * MIB, 16 * MIB, "label: dos\nstart=2048, size=2048\nstart=4096, type=5\n"),
          grow,
          "unsupported-table",
        ],
        [
          "a config drive where the last partition already is (not grown)",
          () => imageOnDisk(dir, 16 * MIB, 16 * MIB, "label: dos\nstart=2048\n"),
          { tailBytes: 4 * MIB },
          "no-room",
        ],
        [
          "a config drive on a dos table with four primaries",
          () =>
            imageOnDisk(
              dir,
              8 * MIB,
              32 * MIB,
              "label: dos\nstart=2048, size=2048\nsize=2048\nsize=2048\nsize=2048\n",
            ),
          { growLast: true, tailBytes: 4 * MIB },
          "no-room",
        ],
      ];
      for (const [name, make, opts, reason] of rows) {
        await t.step(name, async () => {
          const dev = await make();
          const before = dev.bytes.slice();
          await assert.rejects(rewritePartitions(dev, opts), (e) => e instanceof GrowError && e.reason === reason);
          assert.deepEqual(dev.bytes, before, "nothing written");
        });
      }
    });
  },
});
