import assert from "node:assert/strict";
import { packPayload, unpackResult } from "../../../proto/mod.ts";
import { silentLogger } from "../../log/mod.ts";
import { commandBody } from "../command.ts";
import { CommandFailed, InvalidPayload } from "../rejection.ts";
import {
  type FileUploader,
  instanceSnapshotHandler,
  type InstanceSnapshotter,
  SnapshotRefused,
  type StagedSnapshot,
} from "./instance_snapshot.ts";
import { UploadError } from "./logs_collect.ts";

const STAGED: StagedSnapshot = {
  path: "/var/lib/bcd/snapshots/upload-c/snapshot.tar",
  size: 4096,
  sha256: "f".repeat(64),
  runtime: "libvirt-kvm",
  includeMemory: true,
  cpuModel: "Test CPU",
};

function ctx(p: { instance_id: string; include_memory?: boolean; upload_url: string }) {
  const any = packPayload("instance.snapshot", { include_memory: false, ...p });
  return {
    command: commandBody({
      id: "c",
      nodeId: "n",
      kind: "instance.snapshot",
      payload: { typeUrl: any.type_url, value: any.value },
    }),
    signal: new AbortController().signal,
    bootId: "boot-1",
    logger: silentLogger(),
  };
}

class Taker implements InstanceSnapshotter {
  readonly log: string[] = [];
  refuse: SnapshotRefused | undefined;
  take(id: string, memory: boolean, tag: string): Promise<StagedSnapshot> {
    this.log.push(`take ${id} ${memory} ${tag}`);
    return this.refuse ? Promise.reject(this.refuse) : Promise.resolve(STAGED);
  }
  discard(s: StagedSnapshot): Promise<void> {
    this.log.push(`discard ${s.path}`);
    return Promise.resolve();
  }
}

class Up implements FileUploader {
  readonly puts: string[] = [];
  fail: UploadError | undefined;
  putFile(url: string, path: string): Promise<void> {
    this.puts.push(`${url} ${path}`);
    return this.fail ? Promise.reject(this.fail) : Promise.resolve();
  }
}

Deno.test("instance.snapshot uploads the staged file, reports its digest, runtime and CPU model, and discards the stage", async () => {
  const taker = new Taker();
  const up = new Up();
  const h = instanceSnapshotHandler({ snapshotter: () => taker, uploader: up });
  const c = ctx({ instance_id: "i-1", include_memory: true, upload_url: "https://store.example/put?sig=x" });
  assert.deepEqual(h.resources!(c.command), ["instance:i-1"]);
  const out = await h.run(c);
  const r = unpackResult("instance.snapshot", { type_url: out.result!.typeUrl, value: out.result!.value });
  assert.equal(r.sha256, STAGED.sha256);
  assert.equal(Number(r.size_bytes), 4096);
  assert.equal(r.runtime, "libvirt-kvm");
  assert.equal(r.include_memory, true);
  assert.equal(r.cpu_model, "Test CPU");
  assert.deepEqual(taker.log, ["take i-1 true c", `discard ${STAGED.path}`]);
  assert.deepEqual(up.puts, [`https://store.example/put?sig=x ${STAGED.path}`]);
});

Deno.test("instance.snapshot fails by name: a bad payload, no runtime, the runtime's refusal, a stalled upload (stage discarded)", async (t) => {
  await t.step("an http upload URL and a path for an instance id are invalid payloads, before anything runs", () => {
    const h = instanceSnapshotHandler({ snapshotter: () => new Taker(), uploader: new Up() });
    assert.throws(() => h.resources!(ctx({ instance_id: "i-1", upload_url: "http://x/y" }).command), InvalidPayload);
    assert.throws(() => h.resources!(ctx({ instance_id: "../i", upload_url: "https://x/y" }).command), InvalidPayload);
  });
  await t.step("no runtime: no-instance", async () => {
    const h = instanceSnapshotHandler({ snapshotter: () => undefined, uploader: new Up() });
    await assert.rejects(
      h.run(ctx({ instance_id: "i-1", upload_url: "https://x/y" })),
      (e) => e instanceof CommandFailed && e.code === "no-instance",
    );
  });
  await t.step("the runtime's refusal keeps its code and the seed's message; nothing is uploaded", async () => {
    const taker = new Taker();
    const up = new Up();
    const msg = "an instance with passthrough GPUs cannot be snapshotted with its memory; snapshot its disk only";
    taker.refuse = new SnapshotRefused("snapshot-refused", msg);
    const h = instanceSnapshotHandler({ snapshotter: () => taker, uploader: up });
    await assert.rejects(
      h.run(ctx({ instance_id: "i-1", include_memory: true, upload_url: "https://x/y" })),
      (e) => e instanceof CommandFailed && e.code === "snapshot-refused" && e.message === msg,
    );
    assert.deepEqual(up.puts, []);
  });
  await t.step("a stalled upload is upload-stalled and the stage is still discarded", async () => {
    const taker = new Taker();
    const up = new Up();
    up.fail = new UploadError("upload-stalled", "10 bytes moved in 120000 ms");
    const h = instanceSnapshotHandler({ snapshotter: () => taker, uploader: up });
    await assert.rejects(
      h.run(ctx({ instance_id: "i-1", upload_url: "https://x/y" })),
      (e) => e instanceof CommandFailed && e.code === "upload-stalled",
    );
    assert.deepEqual(taker.log, ["take i-1 false c", `discard ${STAGED.path}`]);
  });
});
