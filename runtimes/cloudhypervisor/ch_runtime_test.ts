import assert from "node:assert/strict";
import { RuntimeRefused } from "../../core/converge/instances/runtime.ts";
import { tapName } from "../../core/converge/instances/tap_name.ts";
import { makeQcow2, sha256Hex } from "../../fixtures/libvirt/image_server.ts";
import { contractLaunch, contractRecord } from "../instance_runtime_contract_testing.ts";
import { type ChTestEnv, chTestEnv } from "./ch_testing.ts";
import { VmmSurvived } from "./ch_runtime.ts";
import { unitProperties, VMM_UID_BASE } from "./unit.ts";
import { readRecord } from "./vm_record.ts";

async function withEnv(f: (env: ChTestEnv, t: Deno.TestContext) => Promise<void>, t: Deno.TestContext) {
  const env = await chTestEnv();
  if ("skip" in env) {
    console.log(`skipped: ${env.skip}`);
    await t.step({ name: `skipped: ${env.skip}`, ignore: true, fn: () => {} });
    return;
  }
  try {
    await f(env, t);
  } finally {
    await env.close();
  }
}

async function defineOne(env: ChTestEnv, id: string, nics: { mac: string; bridge: string }[] = []) {
  const base = await makeQcow2(env.dir, `${id}.qcow2`, "16M");
  env.srv.put(`/${id}.qcow2`, base);
  const l = contractLaunch({ url: `${env.srv.origin}/${id}.qcow2`, sha256: await sha256Hex(base), format: "qcow2" });
  await env.rt.define(contractRecord(id, { ...l, nics }));
}

const unit = (id: string) => `bcd-ch-${id}.service`;
const vmmOf = (env: ChTestEnv, id: string) => env.systemd.units.get(unit(id))!.vmm;

Deno.test("cloud-hypervisor stop ladder: the power button first, vm.shutdown/vmm.shutdown/systemctl stop after 60 s, and a VMM that survives is an error", async (t) => {
  await withEnv(async (env) => {
    const id = "vm-ladder";
    await defineOne(env, id);
    await t.step(
      "a guest that honours the power button: nothing else is sent; systemctl still stops and checks",
      async () => {
        await env.rt.start(id, false);
        const t0 = env.clock.t;
        await env.rt.stop(id);
        const calls = vmmOf(env, id).calls;
        assert.ok(calls.includes("PUT vm.power-button"));
        assert.ok(!calls.includes("PUT vm.shutdown") && !calls.includes("PUT vmm.shutdown"));
        assert.equal(env.clock.t - t0, 0, "no grace was waited: the unit ended at once");
        assert.deepEqual(env.systemd.calls.filter((c) => c.startsWith("stop")), [`stop ${unit(id)}`]);
      },
    );
    await t.step(
      "a guest that ignores it: 60 s of grace, then vm.shutdown, vmm.shutdown and systemctl stop",
      async () => {
        env.systemd.guest = { honorsPowerButton: false };
        await env.rt.start(id, false);
        const t0 = env.clock.t;
        await env.rt.stop(id);
        const calls = vmmOf(env, id).calls.filter((c) => c.startsWith("PUT vm.power") || c.includes("shutdown"));
        assert.deepEqual(calls, ["PUT vm.power-button", "PUT vm.shutdown", "PUT vmm.shutdown"]);
        assert.equal(env.clock.t - t0, 60_000, "exactly the 60 s grace");
        assert.equal((await env.rt.list()).find((d) => d.id === id)?.state, "stopped");
      },
    );
    await t.step("a paused VM skips the power button (its guest cannot answer it)", async () => {
      await env.rt.start(id, true);
      const t0 = env.clock.t;
      await env.rt.stop(id);
      assert.ok(!vmmOf(env, id).calls.includes("PUT vm.power-button"));
      assert.equal(env.clock.t - t0, 0);
    });
    await t.step(
      "a hung VMM that survives systemctl stop fails the stop with VmmSurvived and is not forgotten",
      async () => {
        env.systemd.guest = { honorsPowerButton: false, vmmHangs: true };
        await env.rt.start(id, false);
        env.systemd.survivors.add(unit(id));
        await assert.rejects(env.rt.stop(id), VmmSurvived);
        assert.equal((await env.rt.list()).find((d) => d.id === id)?.state, "running", "still listed running");
        await assert.rejects(Deno.stat(env.rt.instanceDir(id)).then(() => env.rt.delete(id)), VmmSurvived);
        assert.ok((await Deno.stat(env.rt.instanceDir(id))).isDirectory, "delete never removes a running VMM's files");
        env.systemd.survivors.delete(unit(id));
        await env.rt.stop(id);
      },
    );
    await t.step("a failed unit counts as stopped", async () => {
      env.systemd.guest = {};
      env.systemd.failOnStop = true;
      await env.rt.start(id, true);
      await env.rt.stop(id);
      assert.equal(await env.systemd.state(unit(id)), "failed");
    });
  }, t);
});

Deno.test("cloud-hypervisor: the unit is launched with the seed's properties for the record, and the uid from 0x7FFD0000 is kept in vm.json", async (t) => {
  await withEnv(async (env) => {
    await defineOne(env, "vm-a");
    await defineOne(env, "vm-b");
    const paths = (id: string) => ({ instanceDir: env.rt.instanceDir(id), volumesDir: `${env.dataDir}/volumes` });
    const a = (await readRecord("vm-a", paths("vm-a")))!;
    const b = (await readRecord("vm-b", paths("vm-b")))!;
    assert.deepEqual([a.uid, b.uid], [VMM_UID_BASE, VMM_UID_BASE + 1]);
    await defineOne(env, "vm-a");
    assert.equal((await readRecord("vm-a", paths("vm-a")))!.uid, VMM_UID_BASE, "a redefine keeps the uid");
    await env.rt.start("vm-b", true);
    const u = env.systemd.units.get(unit("vm-b"))!;
    assert.deepEqual(
      u.properties,
      unitProperties({
        id: "vm-b",
        uid: VMM_UID_BASE + 1,
        runtimeDir: `${env.dataDir}/cloud-hypervisor`,
        vcpus: 1,
        memoryBytes: 64 * 1024 * 1024,
        hugepages: false,
        gpus: false,
        allowedCpus: "",
        allowedMems: "",
        baseImage: `${env.dataDir}/cloud-hypervisor/images/${b.image!.sha256}.qcow2`,
        volumes: [],
        volumesDir: `${env.dataDir}/volumes`,
        underHelper: false,
        binary: "/usr/bin/cloud-hypervisor",
      }),
    );
    assert.deepEqual(u.command, [
      "/usr/bin/cloud-hypervisor",
      "--api-socket",
      `path=${env.rt.instanceDir("vm-b")}/api.sock`,
    ]);
    const created = vmmOf(env, "vm-b").infoNow()!.config;
    assert.deepEqual(created.net, [], "vm.create carries no NICs");
    assert.equal(created.disks?.[0]?.image_type, "Qcow2");
    assert.equal(created.disks?.[0]?.backing_files, true);
    assert.equal(created.disks?.[1]?.image_type, "Raw");
    assert.equal(created.payload.firmware, "/usr/share/cloud-hypervisor/CLOUDHV.fd");
  }, t);
});

Deno.test("cloud-hypervisor: NICs are persistent taps on their bridges before the VMM exists, handed over as fds with vm.add-net; root's copies are closed and the taps go with the stop", async (t) => {
  await withEnv(async (env) => {
    const id = "vm-net";
    const nics = [{ mac: "52:54:00:aa:00:01", bridge: "br-inst" }, { mac: "52:54:00:aa:00:02", bridge: "br-inst" }];
    await defineOne(env, id, nics);
    await env.rt.start(id, false);
    assert.deepEqual([...env.taps.links.keys()], [tapName(id, 0), tapName(id, 1)]);
    assert.deepEqual([...env.taps.links.values()].map((l) => [l.bridge, l.owner]), [["br-inst", 1000], [
      "br-inst",
      1000,
    ]]);
    const vmm = vmmOf(env, id);
    assert.deepEqual(vmm.nics.map((n) => [n.config.id, n.config.mac, n.fds.length]), [
      ["net0", nics[0]!.mac, 1],
      ["net1", nics[1]!.mac, 1],
    ]);
    assert.ok(vmm.nics.every((n) => n.config.tap === undefined), "the VMM never names a tap");
    const order = vmm.calls.filter((c) => /vm\.(create|add-net|boot)/.test(c));
    assert.deepEqual(order, ["PUT vm.create", "PUT vm.add-net", "PUT vm.add-net", "PUT vm.boot"]);
    assert.equal(env.taps.open_.size, 0, "every fd root opened is closed again");
    await env.rt.stop(id);
    assert.equal(env.taps.links.size, 0, "the taps are deleted when the VM stops");
    const dir = env.rt.instanceDir(id);
    assert.deepEqual(env.access.calls, [`grant ${dir} ${VMM_UID_BASE}`, `revoke ${dir} ${VMM_UID_BASE}`]);
  }, t);
});

Deno.test("cloud-hypervisor: a NIC on a bridge outside instance_bridges, an interface that is not a tap or an iso are refused; no VMM runs", async (t) => {
  await withEnv(async (env) => {
    await defineOne(env, "vm-br", [{ mac: "52:54:00:aa:00:03", bridge: "br-other" }]);
    await assert.rejects(
      env.rt.start("vm-br", false),
      (e) => e instanceof RuntimeRefused && e.reason === "bridge-not-allowed",
    );
    await defineOne(env, "vm-nt", [{ mac: "52:54:00:aa:00:04", bridge: "br-inst" }]);
    env.taps.links.set(tapName("vm-nt", 0), { kind: "other" });
    await assert.rejects(env.rt.start("vm-nt", false), (e) => e instanceof RuntimeRefused && e.reason === "not-a-tap");
    assert.equal(env.systemd.units.size, 0, "no unit was started");
    const l = contractLaunch({ url: `${env.srv.origin}/x.iso`, sha256: "b".repeat(64), format: "iso" });
    await assert.rejects(
      env.rt.define(contractRecord("vm-iso", l)),
      (e) => e instanceof RuntimeRefused && e.message.includes("cloud-hypervisor boots disk images, not an iso"),
    );
    await assert.rejects(Deno.stat(env.rt.instanceDir("vm-iso")), Deno.errors.NotFound);
  }, t);
});

Deno.test("cloud-hypervisor: a NIC the VMM refuses stops the unit again, so no half-built VM stays", async (t) => {
  await withEnv(async (env) => {
    const id = "vm-half";
    await defineOne(env, id, [{ mac: "52:54:00:aa:00:05", bridge: "br-inst" }]);
    // The fd sender finds no VMM to deliver to: the add-net fails after the unit was launched.
    const send = env.host["addNet"].bind(env.host);
    env.host.addNet = () => Promise.resolve({ refused: { reason: "vmm-refused", message: "no fd" } });
    await assert.rejects(env.rt.start(id, false), (e) => e instanceof RuntimeRefused && e.reason === "vmm-refused");
    assert.equal(await env.systemd.state(unit(id)), "inactive");
    env.host.addNet = send;
    await env.rt.start(id, false);
    assert.equal((await env.rt.list()).find((d) => d.id === id)?.state, "running");
  }, t);
});

Deno.test("cloud-hypervisor list: only directories with vm.json; a vm.json that fails the strict read is listed unmanaged", async (t) => {
  await withEnv(async (env) => {
    await defineOne(env, "vm-ok");
    await Deno.mkdir(env.rt.instanceDir("not-bcds"), { recursive: true });
    await defineOne(env, "vm-bad");
    const f = `${env.rt.instanceDir("vm-bad")}/vm.json`;
    const r = JSON.parse(await Deno.readTextFile(f));
    r.config.disks[0].path = "/etc/shadow";
    await Deno.writeTextFile(f, JSON.stringify(r));
    const listed = (await env.rt.list()).map((d) => [d.id, d.record === undefined ? "unmanaged" : "bcd"]);
    assert.deepEqual(listed, [["vm-bad", "unmanaged"], ["vm-ok", "bcd"]]);
    await assert.rejects(
      env.rt.start("vm-bad", false),
      (e) => e instanceof RuntimeRefused && e.reason === "unmanaged-domain",
    );
    const root = await env.host.launch("vm-bad");
    assert.equal(root.refused?.reason, "invalid-record", "root refuses it on its own reading too");
  }, t);
});

Deno.test("cloud-hypervisor volumes: root binds them (and the store for hot-plug) into the unit, the VMM's uid gets r/rw entries for the run, a hot-plugged one too, and each is revoked at its unplug or the stop; a link is refused bad-volume", async (t) => {
  await withEnv(async (env) => {
    const id = "vm-vols";
    const vdir = `${env.dataDir}/volumes`;
    await Deno.mkdir(vdir, { recursive: true, mode: 0o700 });
    for (const v of ["va", "vb", "vc"]) await Deno.writeFile(`${vdir}/${v}.raw`, new Uint8Array(0), { mode: 0o600 });
    await defineOne(env, id);
    const { rt, access } = env;
    const va = { volumeId: "va", serial: "disk-a", readOnly: false };
    const vb = { volumeId: "vb", serial: "disk-b", readOnly: true };
    const vc = { volumeId: "vc", serial: "disk-c", readOnly: false };
    await rt.setVolumes(id, [va, vb]);
    const uid = (await rt.recordOf(id)).uid;
    await t.step("the start grants each volume its entry and the store search, and the unit binds them", async () => {
      access.calls.length = 0;
      await rt.start(id, false);
      assert.deepEqual(access.calls.filter((c) => c.startsWith("grant-file")), [
        `grant-file ${vdir} ${uid} x`,
        `grant-file ${vdir}/va.raw ${uid} rw`,
        `grant-file ${vdir} ${uid} x`,
        `grant-file ${vdir}/vb.raw ${uid} r`,
      ]);
      const props = env.systemd.units.get(unit(id))!.properties;
      assert.ok(props.includes(`BindPaths=-${vdir}`));
      assert.ok(props.includes(`BindPaths=${vdir}/va.raw`));
      assert.ok(props.includes(`BindReadOnlyPaths=${vdir}/vb.raw`));
    });
    await t.step("a hot-plug grants before vm.add-disk; an unplug revokes after vm.remove-device", async () => {
      access.calls.length = 0;
      await rt.setVolumes(id, [va, vc]);
      assert.deepEqual(access.calls, [
        `revoke-file ${vdir}/vb.raw ${uid}`,
        `grant-file ${vdir} ${uid} x`,
        `grant-file ${vdir}/vc.raw ${uid} rw`,
      ]);
      const calls = vmmOf(env, id).calls;
      assert.ok(calls.includes("PUT vm.remove-device") && calls.includes("PUT vm.add-disk"));
      assert.deepEqual((await rt.recordOf(id)).volumes.map((v) => v.id), ["va", "vc"]);
    });
    await t.step("the stop revokes every volume's entry and the store's", async () => {
      access.calls.length = 0;
      await rt.stop(id);
      assert.deepEqual(access.calls.filter((c) => c.startsWith("revoke-file")), [
        `revoke-file ${vdir}/va.raw ${uid}`,
        `revoke-file ${vdir}/vc.raw ${uid}`,
        `revoke-file ${vdir} ${uid}`,
      ]);
    });
    await t.step("a volume that is a link is refused bad-volume by root; no unit runs", async () => {
      await Deno.remove(`${vdir}/vc.raw`);
      await Deno.symlink("/etc/hostname", `${vdir}/vc.raw`);
      const runs = env.systemd.calls.filter((c) => c.startsWith("run")).length;
      access.calls.length = 0;
      await assert.rejects(rt.start(id, false), (e) => e instanceof RuntimeRefused && e.reason === "bad-volume");
      assert.equal(env.systemd.calls.filter((c) => c.startsWith("run")).length, runs);
      assert.deepEqual(access.calls.filter((c) => c.startsWith("revoke")), [
        `revoke ${rt.instanceDir(id)} ${uid}`,
        `revoke-file ${vdir}/va.raw ${uid}`,
        `revoke-file ${vdir}/vc.raw ${uid}`,
        `revoke-file ${vdir} ${uid}`,
      ], "the refused launch's entries are taken back");
    });
  }, t);
});
