/**
 * The `cloud-hypervisor` balloon past the runtime (`ch_balloon.ts`), over the fake VMM: what `vm.create` carries, what
 * `vm.resize` is sent (the balloon's take, in whole pages), what is read back when the guest's driver does not
 * follow, the usage reading, and a guest without a balloon never sent a resize. The verbs' shared rows (sizes,
 * refusals, the balloon loop) are in `runtimes/instance_runtime_contract_testing.ts`.
 */
import assert from "node:assert/strict";
import { NoBalloon } from "../../core/balloon/port.ts";
import type { PlanPlacement } from "../../core/converge/instances/domain_plan.ts";
import { makeQcow2, sha256Hex } from "../../fixtures/libvirt/image_server.ts";
import { contractLaunch, contractRecord } from "../instance_runtime_contract_testing.ts";
import { type ChTestEnv, chTestEnvOrSkip } from "./ch_testing.ts";
import { readRecord, writeRecord } from "./vm_record.ts";

const M = 1024 * 1024;
const BALLOON: PlanPlacement = { cpus: "0", mems: "", hugepages: "none", balloon: true };

async function withEnv(t: Deno.TestContext, f: (env: ChTestEnv) => Promise<void>): Promise<void> {
  const env = await chTestEnvOrSkip(t);
  if (!env) return;
  try {
    await f(env);
  } finally {
    await env.close();
  }
}

async function defineOne(env: ChTestEnv, id: string, placement: PlanPlacement | null): Promise<void> {
  const base = await makeQcow2(env.dir, `${id}.qcow2`, "16M");
  env.srv.put(`/${id}.qcow2`, base);
  const l = contractLaunch({ url: `${env.srv.origin}/${id}.qcow2`, sha256: await sha256Hex(base), format: "qcow2" });
  await env.rt.define(contractRecord(id, { ...l, placement }));
}

const vmmOf = (env: ChTestEnv, id: string) => env.systemd.units.get(`bcd-ch-${id}.service`)!.vmm;

Deno.test("cloud-hypervisor balloon: vm.create carries bcd's balloon only when asked, and vm.resize is sent what the balloon takes, in whole pages", async (t) => {
  await withEnv(t, async (env) => {
    await defineOne(env, "vm-bal", BALLOON);
    await defineOne(env, "vm-nob", null);
    await env.rt.start("vm-bal", false);
    await env.rt.start("vm-nob", false);
    const bal = vmmOf(env, "vm-bal");
    const nob = vmmOf(env, "vm-nob");
    await t.step("a balloon of size 0 with free page reporting, no deflate on OOM; none when not asked", () => {
      assert.deepEqual(bal.infoNow()!.config.balloon, { size: 0, free_page_reporting: true });
      assert.equal(nob.infoNow()!.config.balloon, undefined);
    });
    await t.step("leaving the guest 48 of its 64 MiB is a desired_balloon of 16 MiB", async () => {
      await env.rt.setBalloon("vm-bal", 48 * M);
      assert.equal(bal.infoNow()!.config.balloon?.size, 16 * M);
      assert.equal(bal.infoNow()!.memory_actual_size, 48 * M);
    });
    await t.step(
      "a size between pages: the take is rounded down, so the guest keeps at least what was asked",
      async () => {
        await env.rt.setBalloon("vm-bal", 48 * M + 1024);
        assert.equal(bal.infoNow()!.config.balloon?.size, 16 * M - 4096);
        assert.equal((await env.rt.readBalloon("vm-bal")).currentBytes, 48 * M + 4096);
        await env.rt.setBalloon("vm-bal", 64 * M - 1024);
        assert.equal(bal.infoNow()!.config.balloon?.size, 0);
      },
    );
    await t.step("a guest without a balloon answers NoBalloon and its VMM is never sent a resize", async () => {
      await assert.rejects(env.rt.setBalloon("vm-nob", 32 * M), NoBalloon);
      await assert.rejects(env.rt.readBalloon("vm-nob"), NoBalloon);
      assert.ok(!nob.calls.includes("PUT vm.resize"), nob.calls.join(", "));
    });
  });
});

Deno.test("cloud-hypervisor balloon: what is read is what the guest's driver gave (memory_actual_size), and its use is the VMM's anonymous memory or unknown", async (t) => {
  await withEnv(t, async (env) => {
    env.systemd.guest = { balloonDriver: false };
    await defineOne(env, "vm-lazy", BALLOON);
    await env.rt.start("vm-lazy", false);
    await t.step("a guest whose driver does not follow is read as still having all its memory", async () => {
      await env.rt.setBalloon("vm-lazy", 32 * M);
      assert.equal(vmmOf(env, "vm-lazy").infoNow()!.config.balloon?.size, 32 * M, "the target was set");
      assert.equal((await env.rt.readBalloon("vm-lazy")).currentBytes, 64 * M);
    });
    await t.step("no cgroup reading for the unit: the use is unknown (null)", async () => {
      assert.equal((await env.rt.readBalloon("vm-lazy")).usedBytes, null);
    });
    await t.step("the unit's memory.stat anon is the use, never more than the guest's memory", async () => {
      await env.setGuestUse("vm-lazy", 20 * M);
      assert.equal((await env.rt.readBalloon("vm-lazy")).usedBytes, 20 * M);
      await env.setGuestUse("vm-lazy", 70 * M);
      assert.equal((await env.rt.readBalloon("vm-lazy")).usedBytes, 64 * M, "the VMM's own overhead is capped");
    });
  });
});

Deno.test("cloud-hypervisor balloon: a VMM running without a balloon device, whatever the record says, answers NoBalloon (its 'Missing virtio-balloon' refusal)", async (t) => {
  await withEnv(t, async (env) => {
    await defineOne(env, "vm-odd", null);
    await env.rt.start("vm-odd", false);
    // The record now says there is a balloon; the running VMM was created without one.
    const paths = { instanceDir: env.rt.instanceDir("vm-odd"), volumesDir: `${env.dataDir}/volumes` };
    const r = (await readRecord("vm-odd", paths))!;
    await writeRecord({ ...r, placement: BALLOON, config: { ...r.config, balloon: { size: 0 } } }, paths);
    await assert.rejects(
      env.rt.setBalloon("vm-odd", 32 * M),
      (e) => e instanceof NoBalloon && /Missing virtio-balloon/.test(e.message),
    );
    await assert.rejects(env.rt.readBalloon("vm-odd"), NoBalloon);
    assert.equal(vmmOf(env, "vm-odd").infoNow()!.memory_actual_size, 64 * M, "nothing was taken");
  });
});
