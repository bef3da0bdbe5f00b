import assert from "node:assert/strict";
import { packPayload, unpackResult } from "../../../proto/mod.ts";
import { silentLogger } from "../../log/mod.ts";
import { commandBody } from "../command.ts";
import { CommandFailed, InvalidPayload } from "../rejection.ts";
import type { DiskWipeAnswer } from "../../disks/mod.ts";
import { diskWipeHandler, type DiskWiper } from "./disk_wipe.ts";

const inventory = {
  read: () =>
    Promise.resolve({
      hostname: "bm-3",
      disks: [
        { name: "nvme0n1", by_id: "/dev/disk/by-id/nvme-A_1", serial: "S1", size_bytes: 1024 },
        { name: "sda", by_id: "/dev/disk/by-id/ata-B_2", serial: "S2", size_bytes: 2048 },
        { name: "sdb", by_id: "", serial: "", size_bytes: 4096 },
      ],
    }),
};

class RecordingWiper implements DiskWiper {
  readonly calls: Parameters<DiskWiper["wipe"]>[0][] = [];
  constructor(readonly answer: (id: string) => DiskWipeAnswer) {}
  wipe(a: Parameters<DiskWiper["wipe"]>[0]): Promise<DiskWipeAnswer> {
    this.calls.push(a);
    return Promise.resolve(this.answer(a.diskId));
  }
}

const verified = (diskId: string): DiskWipeAnswer => ({
  diskId,
  ok: true,
  outcome: {
    sizeBytes: 1024,
    method: "blkdiscard",
    verify: "sample",
    verifiedBytes: 1024,
    attempts: [
      {
        method: "blkdiscard-secure",
        outcome: "failed",
        message: "blkdiscard-secure: blkdiscard exited 1: not supported",
      },
      { method: "blkdiscard", outcome: "verified" },
    ],
  },
});

function ctx(payload: ReturnType<typeof packPayload>, signal = new AbortController().signal) {
  return {
    command: commandBody({
      id: "c",
      nodeId: "n",
      kind: "disk.wipe",
      payload: { typeUrl: payload.type_url, value: payload.value },
    }),
    signal,
    bootId: "boot-1",
    logger: silentLogger(),
  };
}

Deno.test("disk.wipe sends only by-id names to root, locks each disk, and lists each disk's method and verification", async () => {
  const wiper = new RecordingWiper(verified);
  const h = diskWipeHandler({ wiper, inventory });
  const c = ctx(packPayload("disk.wipe", { devices: ["/dev/disk/by-id/nvme-A_1", "ata-B_2"], verify: true }));
  assert.deepEqual(h.resources!(c.command), ["disk:/dev/disk/by-id/nvme-A_1", "disk:/dev/disk/by-id/ata-B_2"]);
  const res = await h.run(c);
  assert.deepEqual(wiper.calls, [
    { diskId: "nvme-A_1", pattern: "zero", verify: "all" },
    { diskId: "ata-B_2", pattern: "zero", verify: "all" },
  ]);
  const out = unpackResult("disk.wipe", { type_url: res.result!.typeUrl, value: res.result!.value });
  assert.equal(out.disks.length, 2);
  assert.equal(out.disks[0]!.device, "/dev/disk/by-id/nvme-A_1");
  assert.equal(out.disks[0]!.serial, "S1");
  assert.equal(out.disks[0]!.method, 1); // DISCARD
  assert.ok(out.disks[0]!.wiped && out.disks[0]!.verified);
  assert.match(
    out.disks[0]!.message,
    /^blkdiscard, sample read-back of 1024 bytes \[blkdiscard-secure: .*not supported\]/,
  );
});

Deno.test("disk.wipe with no devices wipes every inventory disk that has a by-id name, under the host lock", async () => {
  const wiper = new RecordingWiper(verified);
  const h = diskWipeHandler({ wiper, inventory });
  const c = ctx(packPayload("disk.wipe", { method: 2 }));
  assert.deepEqual(h.resources!(c.command), ["host"]);
  await h.run(c);
  assert.deepEqual(wiper.calls, [
    { diskId: "nvme-A_1", pattern: "zero", verify: "sample", only: "overwrite-zero" },
    { diskId: "ata-B_2", pattern: "zero", verify: "sample", only: "overwrite-zero" },
  ]);
});

Deno.test("disk.wipe with random_pass asks root for the random overwrite: as the ladder's last rung, or alone with ZERO", async () => {
  const wiper = new RecordingWiper(verified);
  const h = diskWipeHandler({ wiper, inventory });
  await h.run(ctx(packPayload("disk.wipe", { devices: ["nvme-A_1"], random_pass: true })));
  await h.run(ctx(packPayload("disk.wipe", { devices: ["nvme-A_1"], random_pass: true, method: 2 })));
  assert.deepEqual(wiper.calls, [
    { diskId: "nvme-A_1", pattern: "random", verify: "sample" },
    { diskId: "nvme-A_1", pattern: "random", verify: "sample", only: "overwrite-random" },
  ]);
});

Deno.test("disk.wipe refuses a kernel name or path as invalid-payload before anything is queued", () => {
  const h = diskWipeHandler({ wiper: new RecordingWiper(verified), inventory });
  for (const d of ["/dev/sda", "/dev/disk/by-id/../../sda", "sda/../x"]) {
    assert.throws(() => h.resources!(ctx(packPayload("disk.wipe", { devices: [d] })).command), InvalidPayload, d);
  }
});

Deno.test("disk.wipe fails with root's reason as the code and stops before the next disk", async (t) => {
  for (const reason of ["mounted", "ramdisk-disk", "verify-failed", "cancelled"]) {
    await t.step(reason, async () => {
      const wiper = new RecordingWiper((id) =>
        id === "nvme-A_1"
          ? verified(id)
          : { diskId: id, ok: false, reason, message: `disk ${id}: ${reason}`, attempts: [] }
      );
      const h = diskWipeHandler({ wiper, inventory });
      await assert.rejects(
        h.run(ctx(packPayload("disk.wipe", { devices: ["nvme-A_1", "ata-B_2", "wwn-0x5"] }))),
        (e) =>
          e instanceof CommandFailed && e.code === reason && /ata-B_2/.test(e.message) &&
          /wiped before it: \/dev\/disk\/by-id\/nvme-A_1/.test(e.message),
      );
      assert.deepEqual(wiper.calls.map((c) => c.diskId), ["nvme-A_1", "ata-B_2"]);
    });
  }
});

Deno.test("disk.wipe refuses a firmware method bcd does not offer yet instead of running another", async () => {
  const wiper = new RecordingWiper(verified);
  const h = diskWipeHandler({ wiper, inventory });
  for (const method of [3, 4]) {
    await assert.rejects(
      h.run(ctx(packPayload("disk.wipe", { devices: ["nvme-A_1"], method }))),
      (e) => e instanceof CommandFailed && e.code === "unsupported-method",
    );
  }
  assert.deepEqual(wiper.calls, []);
});
