/**
 * `restore_from` on the `cloud-hypervisor` runtime over the fake VMM: a snapshot archive is made the way the seed
 * describes (`meta.json`, the flattened overlay, the seed, and cloud-hypervisor's own snapshot of the paused VM under
 * `ch/`, taken by the fake VMM's `vm.snapshot`), with a tenant's additions in its `config.json`; the restore defines a
 * new instance from it and starts it with `vm.restore` (the taps' fds as `net_fds`) and `vm.resume`, on the rebuilt
 * configuration.
 */
import assert from "node:assert/strict";
import { RuntimeRefused } from "../../core/converge/instances/runtime.ts";
import type { SnapshotSource } from "../../core/converge/instances/snapshot_source.ts";
import type { PlanPlacement } from "../../core/converge/instances/domain_plan.ts";
import { makeQcow2, sha256Hex } from "../../fixtures/libvirt/image_server.ts";
import { contractLaunch, contractRecord } from "../instance_runtime_contract_testing.ts";
import { flattenDisk } from "../libvirt/disk_tools.ts";
import { writeTar } from "../libvirt/snapshot_tar.ts";
import { CH_RUNTIME } from "./ch_runtime.ts";
import { type ChTestEnv, chTestEnvOrSkip } from "./ch_testing.ts";
import { readRecord } from "./vm_record.ts";
import { FileVolumeStore } from "../volumes/file_store.ts";
import { ChSnapshots } from "./ch_snapshots.ts";
import { SnapshotRefused, type StagedSnapshot } from "../../core/commands/kind_handlers/instance_snapshot.ts";

const NIC = { mac: "52:54:00:cc:00:01", bridge: "br-inst" };

/**
 * Runs a source instance, snapshots it with memory as the seed lays the archive out; answers the archive's source. A
 * source placed with a balloon has it inflated to 32 MiB first (its device state keeps that).
 */
async function takeSnapshot(
  env: ChTestEnv,
  meta: Record<string, unknown> = {},
  placement: PlanPlacement | null = null,
  tweak: (cfg: Record<string, unknown>) => void = () => {},
): Promise<SnapshotSource> {
  const src = `vm-src-${crypto.randomUUID().slice(0, 6)}`;
  const base = await makeQcow2(env.dir, `${src}.qcow2`, "16M");
  env.srv.put(`/${src}.qcow2`, base);
  const l = contractLaunch({ url: `${env.srv.origin}/${src}.qcow2`, sha256: await sha256Hex(base), format: "qcow2" });
  await env.rt.define(contractRecord(src, { ...l, nics: [NIC], placement }));
  await env.rt.start(src, false);
  const stage = `${env.dir}/stage-${src}`;
  await Deno.mkdir(`${stage}/ch`, { recursive: true });
  const api = env.rt.api(src);
  if (placement?.balloon) await api.resize({ desired_balloon: 32 * 1024 * 1024 });
  await api.pause();
  await api.snapshot(`${stage}/ch`);
  await flattenDisk(`${env.rt.instanceDir(src)}/disk.qcow2`, `${stage}/disk.qcow2`);
  await api.resume();
  // What a tenant's guest or a hostile snapshot could carry in the saved configuration.
  const cfg = JSON.parse(await Deno.readTextFile(`${stage}/ch/config.json`));
  cfg.fs = [{ tag: "x", socket: "/run/virtiofsd.sock", num_queues: 1, queue_size: 1024 }];
  cfg.pmem = [{ file: "/etc/passwd" }];
  cfg.cpus.affinity = [{ vcpu: 0, host_cpus: [0] }];
  cfg.balloon = { size: 32 * 1024 * 1024, deflate_on_oom: true };
  tweak(cfg);
  await Deno.writeTextFile(`${stage}/ch/config.json`, JSON.stringify(cfg));
  const m = {
    format: 1,
    runtime: CH_RUNTIME,
    cpuModel: "test-cpu",
    includeMemory: true,
    vcpus: 1,
    memoryMiB: 64,
    seed: true,
    ...meta,
  };
  const tar = `${env.dir}/${src}.tar`;
  const { sha256, size } = await writeTar(tar, [
    { name: "meta.json", data: new TextEncoder().encode(JSON.stringify(m)) },
    { name: "disk.qcow2", path: `${stage}/disk.qcow2` },
    { name: "seed.iso", path: `${env.rt.instanceDir(src)}/seed.iso` },
    { name: "ch/config.json", path: `${stage}/ch/config.json` },
    { name: "ch/state.json", path: `${stage}/ch/state.json` },
    { name: "ch/memory-ranges", path: `${stage}/ch/memory-ranges` },
  ]);
  await Deno.mkdir(`${env.dataDir}/snapshots`, { recursive: true });
  await Deno.rename(tar, `${env.dataDir}/snapshots/${sha256}.tar`);
  return {
    url: `${env.srv.origin}/${sha256}.tar`,
    sha256,
    runtime: CH_RUNTIME,
    includeMemory: true,
    cpuModel: "test-cpu",
    sizeBytes: size,
  };
}

function restoreRecord(
  id: string,
  src: SnapshotSource,
  mac = "52:54:00:cc:00:02",
  placement: PlanPlacement | null = null,
) {
  return contractRecord(id, { ...contractLaunch(null), restoreFrom: src, nics: [{ ...NIC, mac }], placement });
}

Deno.test("cloud-hypervisor restore_from a memory snapshot: unpacked into a flat disk with no base, started by vm.restore with the taps' fds and vm.resume on the rebuilt configuration", async (t) => {
  const env = await chTestEnvOrSkip(t);
  if (!env) return;
  try {
    const src = await takeSnapshot(env);
    const id = "vm-restored";
    await env.rt.define(restoreRecord(id, src));
    const dir = env.rt.instanceDir(id);
    await t.step("the record names no base image, the snapshot it came from, and no backing files", async () => {
      const r = (await readRecord(id, { instanceDir: dir, volumesDir: `${env.dataDir}/volumes` }))!;
      assert.equal(r.image, null);
      assert.equal(r.restoredFrom, src.sha256);
      assert.equal(r.config.disks?.[0]?.backing_files, false);
      assert.ok((await Deno.stat(`${dir}/ch/memory-ranges`)).isFile);
    });
    await t.step("the first start is vm.restore then vm.resume, never vm.create; ch/ is gone after", async (t2) => {
      await env.rt.start(id, false);
      const vmm = env.systemd.units.get(`bcd-ch-${id}.service`)!.vmm;
      const calls = vmm.calls.filter((c) => /vm\.(create|restore|resume|boot|add-net)/.test(c));
      assert.deepEqual(calls, ["PUT vm.restore", "PUT vm.resume"]);
      assert.equal((await env.rt.list()).find((d) => d.id === id)?.state, "running");
      await assert.rejects(Deno.stat(`${dir}/ch`), Deno.errors.NotFound);
      await t2.step(
        "the VM runs on bcd's rebuilt configuration: the new instance's paths, its NIC, none of the tenant's additions",
        () => {
          const cfg = vmm.infoNow()!.config as unknown as Record<string, unknown>;
          const disks = (cfg.disks as { path: string }[]).map((d) => d.path);
          assert.deepEqual(disks, [`${dir}/disk.qcow2`, `${dir}/seed.iso`]);
          assert.equal(cfg.fs, undefined);
          assert.equal(cfg.pmem, undefined);
          assert.equal((cfg.cpus as { affinity?: unknown }).affinity, undefined, "the snapshot's pinning is dropped");
          assert.equal(cfg.balloon, undefined, "the snapshot's balloon is dropped (bcd's has none here)");
          assert.deepEqual(vmm.nics.map((n) => [n.config.id, n.config.mac, n.fds.length]), [[
            "net0",
            "52:54:00:cc:00:02",
            1,
          ]]);
        },
      );
    });
    await t.step("a later start boots normally (vm.create on the flat disk)", async () => {
      await env.rt.stop(id);
      await env.rt.start(id, false);
      const vmm = env.systemd.units.get(`bcd-ch-${id}.service`)!.vmm;
      assert.ok(vmm.calls.includes("PUT vm.create") && vmm.calls.includes("PUT vm.boot"));
    });
  } finally {
    await env.close();
  }
});

Deno.test("cloud-hypervisor restore_from keeps bcd's balloon: the tenant's saved one is dropped and the target the snapshot's device state held is set back to bcd's before the VM resumes", async (t) => {
  const env = await chTestEnvOrSkip(t);
  if (!env) return;
  try {
    const placement: PlanPlacement = { cpus: "0", mems: "", hugepages: "none", balloon: true };
    const src = await takeSnapshot(env, {}, placement);
    const id = "vm-restored-balloon";
    await env.rt.define(restoreRecord(id, src, "52:54:00:cc:00:03", placement));
    await env.rt.start(id, false);
    const vmm = env.systemd.units.get(`bcd-ch-${id}.service`)!.vmm;
    assert.deepEqual(vmm.calls.filter((c) => /vm\.(restore|resize|resume)/.test(c)), [
      "PUT vm.restore",
      "PUT vm.resize",
      "PUT vm.resume",
    ]);
    assert.deepEqual(vmm.infoNow()!.config.balloon, { size: 0, free_page_reporting: true }, "bcd's configuration");
    assert.equal(vmm.infoNow()!.memory_actual_size, 64 * 1024 * 1024, "the tenant's 32 MiB balloon is deflated");
    assert.equal((await env.rt.readBalloon(id)).currentBytes, 64 * 1024 * 1024);
  } finally {
    await env.close();
  }
});

Deno.test("cloud-hypervisor restore_from refuses another runtime's snapshot, another CPU model, another shape, and leaves no directory", async (t) => {
  const env = await chTestEnvOrSkip(t);
  if (!env) return;
  try {
    const cases: Array<[string, Record<string, unknown>, (r: ReturnType<typeof restoreRecord>) => typeof r, string]> = [
      ["a libvirt-kvm snapshot", { runtime: "libvirt-kvm" }, (r) => r, "snapshot-runtime"],
      ["another CPU model", { cpuModel: "other-cpu" }, (r) => r, "snapshot-cpu-model"],
      ["another memory size", {}, (r) => ({ ...r, memoryBytes: 128 * 1024 * 1024 }), "snapshot-shape"],
    ];
    for (const [what, meta, change, reason] of cases) {
      await t.step(`${what}: ${reason}`, async () => {
        const src = await takeSnapshot(env, meta);
        const id = `vm-r-${crypto.randomUUID().slice(0, 6)}`;
        await assert.rejects(
          env.rt.define(change(restoreRecord(id, src))),
          (e) => e instanceof RuntimeRefused && e.reason === reason,
        );
        await assert.rejects(Deno.stat(env.rt.instanceDir(id)), Deno.errors.NotFound);
      });
    }
    await t.step(
      "a saved configuration with another NIC count is refused at the start, before any VMM runs",
      async () => {
        const src = await takeSnapshot(env);
        const id = "vm-r-nics";
        await env.rt.define(contractRecord(id, { ...contractLaunch(null), restoreFrom: src, nics: [] }));
        await assert.rejects(
          env.rt.start(id, false),
          (e) => e instanceof RuntimeRefused && e.reason === "snapshot-shape",
        );
        assert.equal(env.systemd.units.get(`bcd-ch-${id}.service`), undefined);
      },
    );
  } finally {
    await env.close();
  }
});

async function tarNames(path: string): Promise<string[]> {
  const out = await new Deno.Command("tar", { args: ["-tf", path], stdout: "piped" }).output();
  return new TextDecoder().decode(out.stdout).trim().split("\n");
}

Deno.test("ChSnapshots: a memory and a disk-only snapshot of a running VM are staged as the seed lays them out, the VM runs on, and the memory one restores into a new instance", async (t) => {
  const env = await chTestEnvOrSkip(t);
  if (!env) return;
  try {
    const snaps = new ChSnapshots({
      runtime: env.rt,
      dataDir: env.dataDir,
      cpuModel: () => Promise.resolve("test-cpu"),
    });
    const src = "vm-snap";
    const base = await makeQcow2(env.dir, `${src}.qcow2`, "16M");
    env.srv.put(`/${src}.qcow2`, base);
    const l = contractLaunch({ url: `${env.srv.origin}/${src}.qcow2`, sha256: await sha256Hex(base), format: "qcow2" });
    await env.rt.define(contractRecord(src, { ...l, nics: [NIC] }));
    await env.rt.start(src, false);
    const taken: Record<string, StagedSnapshot> = {};
    for (const memory of [true, false]) {
      await t.step(
        `${memory ? "memory" : "disk-only"}: meta.json, the flat disk, the seed${
          memory ? " and ch/" : ""
        }; the VM runs on`,
        async () => {
          const s = await snaps.take(src, memory, `cmd-${memory}`, new AbortController().signal);
          assert.deepEqual(await tarNames(s.path), [
            "meta.json",
            "disk.qcow2",
            "seed.iso",
            ...(memory ? ["ch/config.json", "ch/state.json", "ch/memory-ranges"] : []),
          ]);
          assert.equal(s.runtime, CH_RUNTIME);
          assert.equal(s.cpuModel, memory ? "test-cpu" : "");
          assert.equal((await env.rt.list()).find((d) => d.id === src)?.state, "running");
          const puts = env.systemd.units.get(`bcd-ch-${src}.service`)!.vmm.calls.filter((c) => c.startsWith("PUT"));
          const want = ["PUT vm.pause", ...(memory ? ["PUT vm.snapshot"] : []), "PUT vm.resume"];
          assert.deepEqual(puts.slice(-want.length), want);
          taken[String(memory)] = s;
        },
      );
    }
    await t.step("a memory snapshot of a stopped VM is refused; the stage is gone", async () => {
      await env.rt.stop(src);
      await assert.rejects(snaps.take(src, true, "cmd-stopped", new AbortController().signal), SnapshotRefused);
      await assert.rejects(Deno.stat(`${env.dataDir}/snapshots/upload-cmd-stopped`), Deno.errors.NotFound);
    });
    await t.step("restore_from the memory snapshot starts a new instance by vm.restore", async () => {
      const s = taken["true"]!;
      await Deno.rename(s.path, `${env.dataDir}/snapshots/${s.sha256}.tar`);
      const ref: SnapshotSource = {
        url: `${env.srv.origin}/x.tar`,
        sha256: s.sha256,
        runtime: CH_RUNTIME,
        includeMemory: true,
        cpuModel: "test-cpu",
        sizeBytes: s.size,
      };
      await env.rt.define(restoreRecord("vm-from-snap", ref));
      await env.rt.start("vm-from-snap", false);
      const calls = env.systemd.units.get("bcd-ch-vm-from-snap.service")!.vmm.calls;
      assert.ok(calls.includes("PUT vm.restore") && !calls.includes("PUT vm.create"));
      assert.equal((await env.rt.list()).find((d) => d.id === "vm-from-snap")?.state, "running");
    });
    for (const s of Object.values(taken)) await snaps.discard(s);
  } finally {
    await env.close();
  }
});

Deno.test("cloud-hypervisor restore_from with volumes: the restored VM has the current spec's volumes by serial (their ACL entries granted before the VMM runs), a new one hot-added before the resume, and none of the snapshot's disks", async (t) => {
  const env = await chTestEnvOrSkip(t);
  if (!env) return;
  try {
    const store = new FileVolumeStore({ dir: `${env.dataDir}/volumes` });
    for (const v of ["va", "vc"]) await store.create(v, `disk-${v}`, 8 * 1024 * 1024);
    // The source had a volume with serial disk-va as _disk2; a tenant's snapshot may name any path beside it.
    const src = await takeSnapshot(env, {}, null, (cfg) => {
      (cfg.disks as unknown[]).push(
        { id: "_disk2", path: "/etc/passwd", serial: "disk-va", image_type: "Raw" },
        { id: "_disk3", path: "/dev/sda", serial: "disk-zz", image_type: "Raw" },
      );
    });
    const id = "vm-restored-vols";
    const unitThere: [string, boolean][] = [];
    const grant = env.access.grantFile.bind(env.access);
    env.access.grantFile = async (path, uid, perms) => {
      unitThere.push([path, env.systemd.units.has(`bcd-ch-${id}.service`)]);
      return await grant(path, uid, perms);
    };
    await env.rt.define({
      ...restoreRecord(id, src),
      volumes: [
        { volumeId: "va", serial: "disk-va", readOnly: false },
        { volumeId: "vc", serial: "disk-vc", readOnly: true },
      ],
    });
    await env.rt.start(id, false);
    const vmm = env.systemd.units.get(`bcd-ch-${id}.service`)!.vmm;
    await t.step("vm.restore, then vm.add-disk of the volume the snapshot did not have, then vm.resume", () => {
      const calls = vmm.calls.filter((c) => /vm\.(create|restore|resume|boot|add-disk)/.test(c));
      assert.deepEqual(calls, ["PUT vm.restore", "PUT vm.add-disk", "PUT vm.resume"]);
    });
    await t.step(
      "the VM's disks: its own root and seed, va by serial under the snapshot's id, vc; no path of the snapshot's",
      () => {
        const disks = vmm.infoNow()!.config.disks ?? [];
        const dir = env.rt.instanceDir(id);
        assert.deepEqual(disks.map((d) => d.path), [
          `${dir}/disk.qcow2`,
          `${dir}/seed.iso`,
          store.rawPath("va"),
          store.rawPath("vc"),
        ]);
        assert.deepEqual(disks.filter((d) => d.serial).map((d) => [d.id, d.serial, d.readonly]), [
          ["_disk2", "disk-va", false],
          ["vol-vc", "disk-vc", true],
        ]);
      },
    );
    await t.step("each volume's ACL entry was granted before the VMM's unit existed", () => {
      for (const v of ["va", "vc"]) {
        assert.deepEqual(unitThere.find(([p]) => p === store.rawPath(v)), [store.rawPath(v), false]);
      }
    });
    await t.step("the restored volume is unplugged by the id it has when a later spec drops it", async () => {
      await env.rt.setVolumes(id, [{ volumeId: "vc", serial: "disk-vc", readOnly: true }]);
      assert.deepEqual((vmm.infoNow()!.config.disks ?? []).filter((d) => d.serial).map((d) => d.id), ["vol-vc"]);
      assert.deepEqual((await env.rt.list()).find((d) => d.id === id)?.record?.volumes?.map((v) => v.volumeId), [
        "vc",
      ]);
    });
  } finally {
    await env.close();
  }
});
