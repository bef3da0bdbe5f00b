import assert from "node:assert/strict";
import { packPayload, unpackResult } from "../../../proto/mod.ts";
import { silentLogger } from "../../log/mod.ts";
import { commandBody } from "../command.ts";
import { CommandFailed, InvalidPayload } from "../rejection.ts";
import type { DiskDeployAnswer } from "../../disks/mod.ts";
import { deployImageHandler, type ImageDeployer } from "./deploy_image.ts";

const SHA = "ab".repeat(32);

class RecordingDeployer implements ImageDeployer {
  readonly calls: Parameters<ImageDeployer["deploy"]>[0][] = [];
  constructor(readonly answer: DiskDeployAnswer) {}
  deploy(a: Parameters<ImageDeployer["deploy"]>[0]): Promise<DiskDeployAnswer> {
    this.calls.push(a);
    return Promise.resolve(this.answer);
  }
}

function ctx(payload: Record<string, unknown>) {
  const any = packPayload("deploy.image", payload);
  return {
    command: commandBody({
      id: "c",
      nodeId: "n",
      kind: "deploy.image",
      payload: { typeUrl: any.type_url, value: any.value },
    }),
    signal: new AbortController().signal,
    bootId: "boot-1",
    logger: silentLogger(),
  };
}

const good = {
  url: "https://images.example/os.raw",
  sha256: SHA.toUpperCase(),
  target_device: "/dev/disk/by-id/nvme-A_1",
};

Deno.test("deploy.image sends root the by-id name, the https URL and the digest, and reports what was verified", async () => {
  const d = new RecordingDeployer({ diskId: "nvme-A_1", ok: true, writtenBytes: 4096, sha256: SHA });
  const h = deployImageHandler({ deployer: d });
  const c = ctx(good);
  assert.deepEqual(h.resources!(c.command), ["disk:/dev/disk/by-id/nvme-A_1"]);
  const res = await h.run(c);
  assert.deepEqual(d.calls, [{ diskId: "nvme-A_1", url: good.url, sha256: SHA, format: "raw" }]);
  const out = unpackResult("deploy.image", { type_url: res.result!.typeUrl, value: res.result!.value });
  assert.equal(out.target_device, "/dev/disk/by-id/nvme-A_1");
  assert.equal(Number(out.written_bytes), 4096);
  assert.equal(out.sha256, SHA);
});

Deno.test("deploy.image refuses a payload without a by-id target, an https URL or a SHA-256 before queueing", async (t) => {
  const h = deployImageHandler({
    deployer: new RecordingDeployer({ diskId: "x", ok: true, writtenBytes: 0, sha256: SHA }),
  });
  const rows: [string, Record<string, unknown>][] = [
    ["a kernel name", { ...good, target_device: "/dev/sda" }],
    ["no target", { ...good, target_device: "" }],
    ["plain http", { ...good, url: "http://images.example/os.raw" }],
    ["no digest", { ...good, sha256: "" }],
  ];
  for (const [name, p] of rows) {
    await t.step(name, () => assert.throws(() => h.resources!(ctx(p).command), InvalidPayload));
  }
});

Deno.test("deploy.image fails with root's reason and says whether the disk was left unbootable", async (t) => {
  for (const [reason, zeroed] of [["digest-mismatch", true], ["not-https", false], ["mounted", false]] as const) {
    await t.step(reason, async () => {
      const d = new RecordingDeployer({
        diskId: "nvme-A_1",
        ok: false,
        reason,
        message: reason,
        zeroedBootArea: zeroed,
      });
      await assert.rejects(
        deployImageHandler({ deployer: d }).run(ctx(good)),
        (e) =>
          e instanceof CommandFailed && e.code === reason &&
          (zeroed ? /first MiB zeroed/ : /was not written/).test(e.message),
      );
    });
  }
});

Deno.test("deploy.image hands root a qcow2 image with its format stated, and refuses formats it does not convert", async () => {
  const d = new RecordingDeployer({ diskId: "nvme-A_1", ok: true, writtenBytes: 1, sha256: SHA });
  const h = deployImageHandler({ deployer: d });
  await h.run(ctx({ ...good, format: "qcow2" }));
  assert.deepEqual(d.calls, [{ diskId: "nvme-A_1", url: good.url, sha256: SHA, format: "qcow2" }]);
  await assert.rejects(
    h.run(ctx({ ...good, format: "vmdk" })),
    (e) => e instanceof CommandFailed && e.code === "unsupported-format",
  );
  assert.equal(d.calls.length, 1, "nothing else reached root");
});

Deno.test("deploy.image asks root for the root growth and the config drive, and reports both", async () => {
  const d = new RecordingDeployer({
    diskId: "nvme-A_1",
    ok: true,
    writtenBytes: 4096,
    sha256: SHA,
    grown: { partition: 1, sizeBytes: 78 << 20, filesystem: "ext", resized: true },
    configDrivePartition: 2,
  });
  const user = new TextEncoder().encode("#cloud-config\n");
  const res = await deployImageHandler({ deployer: d }).run(ctx({
    ...good,
    grow_root: true,
    config_drive: { meta_data: "instance-id: i-1\n", user_data: user },
  }));
  assert.deepEqual(d.calls, [{
    diskId: "nvme-A_1",
    url: good.url,
    sha256: SHA,
    format: "raw",
    growRoot: true,
    configDrive: { metaData: "instance-id: i-1\n", userData: btoa("#cloud-config\n") },
  }]);
  const out = unpackResult("deploy.image", { type_url: res.result!.typeUrl, value: res.result!.value });
  assert.equal(out.grown_partition, 1);
  assert.equal(Number(out.grown_partition_bytes), 78 << 20);
  assert.equal(out.filesystem_resized, true);
  assert.equal(out.config_drive_partition, 2);
});

Deno.test("deploy.image refuses a config drive without meta-data or with a file past 64 KiB before queueing", async (t) => {
  const h = deployImageHandler({
    deployer: new RecordingDeployer({ diskId: "x", ok: true, writtenBytes: 0, sha256: SHA }),
  });
  const rows: [string, Record<string, unknown>][] = [
    ["no meta_data", { user_data: new Uint8Array(1) }],
    ["user_data past 64 KiB", { meta_data: "instance-id: i\n", user_data: new Uint8Array(64 * 1024 + 1) }],
    ["network_config past 64 KiB", { meta_data: "instance-id: i\n", network_config: "x".repeat(64 * 1024 + 1) }],
  ];
  for (const [name, cd] of rows) {
    await t.step(
      name,
      () => assert.throws(() => h.resources!(ctx({ ...good, config_drive: cd }).command), InvalidPayload),
    );
  }
});
