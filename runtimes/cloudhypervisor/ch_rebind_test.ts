/**
 * `cloud-hypervisor`'s identity rebind and hot-unplug past what the shared contract sees: the VMM user's ACL entry on
 * the rebind file for the try only, and a guest that has not ejected a device (`detach-pending`) for the rebind disk
 * and for a volume, whose one-writer hold and ACL entry stay until the guest lets go.
 */
import assert from "node:assert/strict";
import { DetachPending } from "../../core/converge/instances/runtime.ts";
import { rebindImage, rebindNonce } from "../../core/rebind/mod.ts";
import { makeQcow2, sha256Hex } from "../../fixtures/libvirt/image_server.ts";
import { contractLaunch, contractRecord } from "../instance_runtime_contract_testing.ts";
import { FileVolumeStore } from "../volumes/file_store.ts";
import { type ChTestEnv, chTestEnvOrSkip } from "./ch_testing.ts";
import { VMM_UID_BASE } from "./unit.ts";

async function withEnv(t: Deno.TestContext, f: (env: ChTestEnv) => Promise<void>): Promise<void> {
  const env = await chTestEnvOrSkip(t);
  if (!env) return;
  try {
    await f(env);
  } finally {
    await env.close();
  }
}

async function runOne(env: ChTestEnv, id: string, volumes: { volumeId: string; serial: string }[] = []) {
  const base = await makeQcow2(env.dir, `${id}.qcow2`, "16M");
  env.srv.put(`/${id}.qcow2`, base);
  const l = contractLaunch({ url: `${env.srv.origin}/${id}.qcow2`, sha256: await sha256Hex(base), format: "qcow2" });
  await env.rt.define({
    ...contractRecord(id, l),
    ...(volumes.length ? { volumes: volumes.map((v) => ({ ...v, readOnly: false })) } : {}),
  });
  await env.rt.start(id, false);
  return env.systemd.units.get(`bcd-ch-${id}.service`)!.vmm;
}

const image = (nonce: string) => rebindImage({ account: "ubuntu", principals: "exec-r1\n" }, nonce);

Deno.test("cloud-hypervisor rebind: the file is the node's 0600 with an rw ACL entry for the VMM's user during the try only, hot-added Raw as vdz with serial bc-rebind", async (t) => {
  await withEnv(t, async (env) => {
    const id = "vm-rb-acl";
    const vmm = await runOne(env, id);
    const file = `${env.rt.instanceDir(id)}/rebind.raw`;
    const modes: number[] = [];
    const grant = env.access.grantFile.bind(env.access);
    env.access.grantFile = async (path, uid, perms) => {
      if (path === file) modes.push((await Deno.stat(path)).mode! & 0o777);
      return await grant(path, uid, perms);
    };
    vmm.guest.answersRebind = true;
    env.access.calls.length = 0;
    const nonce = rebindNonce();
    assert.equal(await env.rt.rebind(id, image(nonce), nonce), true);
    assert.deepEqual(modes, [0o600], "written 0600 before the grant");
    assert.deepEqual(env.access.calls, [
      `grant-file ${file} ${VMM_UID_BASE} rw`,
      `revoke-file ${file} ${VMM_UID_BASE}`,
    ]);
    assert.deepEqual(vmm.hotAdded.map((d) => [d.id, d.path, d.image_type, d.serial, d.readonly ?? false]), [
      ["vdz", file, "Raw", "bc-rebind", false],
    ]);
    assert.ok(vmm.calls.includes("PUT vm.remove-device"));
    await assert.rejects(Deno.stat(file), Deno.errors.NotFound);
  });
});

Deno.test("cloud-hypervisor rebind: a guest that has not ejected the disk leaves it detach-pending; the answer counts, the ACL entry goes and the file is zeroed and deleted; the next try asks again and adds no second disk", async (t) => {
  await withEnv(t, async (env) => {
    const id = "vm-rb-held";
    const vmm = await runOne(env, id);
    const file = `${env.rt.instanceDir(id)}/rebind.raw`;
    vmm.guest.answersRebind = true;
    vmm.guest.acksUnplug = false;
    env.access.calls.length = 0;
    const nonce = rebindNonce();
    assert.equal(await env.rt.rebind(id, image(nonce), nonce), true);
    const info = await env.rt.api(id).info();
    assert.ok(Object.hasOwn(info.device_tree ?? {}, "vdz"), "the guest still holds vdz");
    assert.ok(!(info.config.disks ?? []).some((d) => d.id === "vdz"), "gone from the configuration");
    assert.deepEqual(env.access.calls, [
      `grant-file ${file} ${VMM_UID_BASE} rw`,
      `revoke-file ${file} ${VMM_UID_BASE}`,
    ]);
    await assert.rejects(Deno.stat(file), Deno.errors.NotFound);
    await t.step(
      "the next try while the guest still holds it: asked again, detach-pending, no second disk",
      async () => {
        const adds = vmm.hotAdded.length;
        const n2 = rebindNonce();
        await assert.rejects(env.rt.rebind(id, image(n2), n2), DetachPending);
        assert.equal(vmm.hotAdded.length, adds);
        await assert.rejects(Deno.stat(file), Deno.errors.NotFound);
      },
    );
    await t.step("once the guest let go, a try adds the disk again", async () => {
      vmm.guestEjects("vdz");
      assert.ok(!Object.hasOwn((await env.rt.api(id).info()).device_tree ?? {}, "vdz"));
      const n3 = rebindNonce();
      assert.equal(await env.rt.rebind(id, image(n3), n3), true);
    });
  });
});

Deno.test("cloud-hypervisor volumes: an unplug the guest has not acknowledged is detach-pending until it ejects the disk; the record (the one-writer hold) and the ACL entry stay until then", async (t) => {
  await withEnv(t, async (env) => {
    const id = "vm-vol-held";
    const store = new FileVolumeStore({ dir: `${env.dataDir}/volumes` });
    await store.create("va", "disk-va", 8 * 1024 * 1024);
    await store.create("vb", "disk-vb", 8 * 1024 * 1024);
    const vmm = await runOne(env, id, [{ volumeId: "va", serial: "disk-va" }, { volumeId: "vb", serial: "disk-vb" }]);
    const recorded = async () =>
      (await env.rt.list()).find((d) => d.id === id)?.record?.volumes?.map((v) => v.volumeId);
    vmm.guest.acksUnplug = false;
    env.access.calls.length = 0;
    const keepA = [{ volumeId: "va", serial: "disk-va", readOnly: false }];
    await t.step("the VMM accepts the removal; the guest holds vol-vb: detach-pending, nothing released", async () => {
      await assert.rejects(
        env.rt.setVolumes(id, keepA),
        (e) => e instanceof DetachPending && /has not released vol-vb \(volume vb\) yet/.test(e.message),
      );
      assert.deepEqual(await recorded(), ["va", "vb"]);
      assert.deepEqual(env.access.calls, [], "no entry revoked");
    });
    await t.step("asked again next pass, still held: the removal is repeated and still pending", async () => {
      const before = vmm.calls.filter((c) => c === "PUT vm.remove-device").length;
      await assert.rejects(env.rt.setVolumes(id, keepA), DetachPending);
      assert.equal(vmm.calls.filter((c) => c === "PUT vm.remove-device").length, before + 1);
      assert.deepEqual(await recorded(), ["va", "vb"]);
    });
    await t.step("once the guest ejected it: released, recorded without it, its entry revoked", async () => {
      vmm.guestEjects("vol-vb");
      await env.rt.setVolumes(id, keepA);
      assert.deepEqual(await recorded(), ["va"]);
      assert.deepEqual(env.access.calls, [`revoke-file ${store.rawPath("vb")} ${VMM_UID_BASE}`]);
    });
  });
});
