import assert from "node:assert/strict";
import { SnapshotRefused } from "../../core/commands/kind_handlers/instance_snapshot.ts";
import type { DomainPlan, HostDomain, LibvirtHostPort } from "../../core/converge/instances/domain_plan.ts";
import { LibvirtRuntime } from "./libvirt_runtime.ts";
import {
  cleanStaging,
  GPU_MEMORY_SNAPSHOT_REFUSAL,
  LibvirtSnapshots,
  VOLUME_MEMORY_SNAPSHOT_REFUSAL,
} from "./snapshots.ts";

const PLAN: DomainPlan = {
  id: "i-1",
  allocationId: "alloc-1",
  vcpus: 1,
  memoryMiB: 64,
  image: { sha256: "a".repeat(64), format: "qcow2" },
  nics: [],
  gpus: [],
  placement: null,
  seed: true,
  restoredFrom: null,
};

/** A host that lists `domains` and records every verb; no verb may run in these refusal tests. */
function host(domains: HostDomain[]): LibvirtHostPort & { verbs: string[] } {
  const verbs: string[] = [];
  const verb = (name: string) => () => {
    verbs.push(name);
    return Promise.resolve({});
  };
  return {
    verbs,
    list: () => Promise.resolve(domains),
    define: verb("define"),
    start: verb("start"),
    suspend: verb("suspend"),
    resume: verb("resume"),
    shutdown: verb("shutdown"),
    destroy: verb("destroy"),
    undefine: verb("undefine"),
    blockresize: verb("blockresize"),
    attachDisk: verb("attachDisk"),
    detachDisk: verb("detachDisk"),
    save: verb("save"),
    restore: verb("restore"),
    setmem: verb("setmem"),
    domstats: verb("domstats"),
  };
}

Deno.test("instance.snapshot refusals on libvirt-kvm: each with the seed's message, before the domain is touched", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-snap-refuse-" });
  try {
    const rows: Array<[string, HostDomain[], boolean, (id: string) => boolean, string, RegExp]> = [
      ["an instance no runtime holds", [], false, () => false, "no-instance", /no instance i-1/],
      [
        "a domain bcd did not define",
        [{ name: "i-1", state: "running", plan: undefined }],
        false,
        () => false,
        "no-instance",
        /not bcd's/,
      ],
      [
        "memory beside passthrough GPUs",
        [{ name: "i-1", state: "running", plan: { ...PLAN, gpus: [{ uuid: "GPU-1", pciBusId: "0000:17:00.0" }] } }],
        true,
        () => false,
        "snapshot-refused",
        /^an instance with passthrough GPUs cannot be snapshotted with its memory; snapshot its disk only$/,
      ],
      [
        "memory beside a read-write volume",
        [{ name: "i-1", state: "running", plan: PLAN }],
        true,
        (id) => id === "i-1",
        "snapshot-refused",
        /ErrMemorySnapshotWithVolumes/,
      ],
      [
        "memory of a stopped instance",
        [{ name: "i-1", state: "stopped", plan: PLAN }],
        true,
        () => false,
        "snapshot-refused",
        /no memory state/,
      ],
    ];
    for (const [what, domains, memory, rw, code, msg] of rows) {
      await t.step(what, async () => {
        const h = host(domains);
        const runtime = new LibvirtRuntime({ host: h, dataDir: dir });
        const s = new LibvirtSnapshots({
          runtime,
          host: h,
          dataDir: dir,
          cpuModel: () => Promise.resolve("cpu"),
          hasWritableVolume: rw,
        });
        await assert.rejects(
          s.take("i-1", memory, "cmd1", new AbortController().signal),
          (e) => e instanceof SnapshotRefused && e.code === code && msg.test(e.message),
        );
        assert.deepEqual(h.verbs, []);
      });
    }
    assert.equal(GPU_MEMORY_SNAPSHOT_REFUSAL.includes("snapshot its disk only"), true);
    assert.equal(VOLUME_MEMORY_SNAPSHOT_REFUSAL.includes("snapshot its disk only"), true);
    await t.step("a refused snapshot staged nothing", async () => {
      await assert.rejects(Deno.stat(`${dir}/snapshots`), Deno.errors.NotFound);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cleanStaging() removes the upload stages, partial downloads and half-unpacked restores a crash left, and nothing else", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-snap-clean-" });
  try {
    await Deno.mkdir(`${dir}/upload-01CRASHED`);
    await Deno.writeTextFile(`${dir}/upload-01CRASHED/snapshot.tar`, "x");
    await Deno.mkdir(`${dir}/upload-01RUNNING`);
    await Deno.writeTextFile(`${dir}/.partial-${"b".repeat(64)}-1234`, "x");
    await Deno.mkdir(`${dir}/.restore-i-1-abcd1234`);
    await Deno.writeTextFile(`${dir}/${"c".repeat(64)}.tar`, "kept: a verified download");
    const removed = await cleanStaging(dir, new Set(["upload-01RUNNING"]));
    assert.deepEqual(removed, [`.partial-${"b".repeat(64)}-1234`, ".restore-i-1-abcd1234", "upload-01CRASHED"]);
    const left = [];
    for await (const e of Deno.readDir(dir)) left.push(e.name);
    assert.deepEqual(left.sort(), [`${"c".repeat(64)}.tar`, "upload-01RUNNING"]);
    assert.deepEqual(await cleanStaging(`${dir}/absent`), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
