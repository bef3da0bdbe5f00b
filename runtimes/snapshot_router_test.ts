import assert from "node:assert/strict";
import { SnapshotRefused, type StagedSnapshot } from "../core/commands/kind_handlers/instance_snapshot.ts";
import { SnapshotRouter } from "./snapshot_router.ts";

function taker(runtime: string, log: string[]) {
  return {
    take: (id: string) => {
      log.push(`${runtime} take ${id}`);
      return Promise.resolve({ path: `/s/${id}`, size: 1, sha256: "0", runtime, includeMemory: false, cpuModel: "" });
    },
    discard: (s: StagedSnapshot) => {
      log.push(`${runtime} discard ${s.path}`);
      return Promise.resolve();
    },
  };
}

Deno.test("SnapshotRouter sends each instance to the runtime that holds it, a stage back to its maker, and refuses an instance none holds", async () => {
  const log: string[] = [];
  const r = new SnapshotRouter([
    {
      runtime: "libvirt-kvm",
      holds: (id) => Promise.resolve(id.startsWith("lv")),
      snapshotter: taker("libvirt-kvm", log),
    },
    {
      runtime: "cloud-hypervisor",
      holds: (id) => Promise.resolve(id.startsWith("ch")),
      snapshotter: taker("cloud-hypervisor", log),
    },
  ]);
  const signal = new AbortController().signal;
  const s = await r.take("ch-1", false, "t", signal);
  await r.take("lv-1", false, "t", signal);
  await r.discard(s);
  assert.deepEqual(log, ["cloud-hypervisor take ch-1", "libvirt-kvm take lv-1", "cloud-hypervisor discard /s/ch-1"]);
  await assert.rejects(
    r.take("other", false, "t", signal),
    (e) => e instanceof SnapshotRefused && e.code === "no-instance",
  );
});
