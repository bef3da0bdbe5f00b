/**
 * Test support: the `InstanceRuntime` contract as a runtime plugin keeps it (`plugin_runtime.ts`), run over the sample
 * plugin by a local plugin host and through the root helper's relay: a domain bcd did not define is listed unmanaged;
 * a defined one carries its record back and moves through its states; a delete removes it; and a plugin that does not
 * create an instance's taps leaves it stopped and failed with the seed's message.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { DomainRecord, InstanceRuntime } from "../converge/instances/runtime.ts";
import { RuntimeRefused } from "../converge/instances/runtime.ts";
import { tapName } from "../converge/instances/tap_name.ts";
import type { PluginHost } from "./host.ts";
import { PluginRuntime, TAPS_MISSING } from "./plugin_runtime.ts";

const ID = "0b6c9c1e-3f7a-4d55-9d47-2a7a1c5e6f01";

/** A record with two NICs. */
export function pluginRecord(id = ID): DomainRecord {
  return {
    id,
    allocationId: "alloc-1",
    vcpus: 2,
    memoryBytes: 512 * 1024 * 1024,
    imageSha256: "a".repeat(64),
    gpus: [],
    launch: {
      image: { url: "https://images.example/base.qcow2", sha256: "a".repeat(64), format: "qcow2" },
      diskBytes: 0,
      nics: [{ mac: "52:54:00:00:00:01", bridge: "br0" }, { mac: "52:54:00:00:00:02", bridge: "br1" }],
      gpus: [],
      placement: { cpus: "0-1", mems: "0", hugepages: "none", balloon: false },
      hostname: "vm-1",
      userData: null,
      sshFromHostOnly: true,
      identityRebindRef: "rebind-1",
      guarded: true,
    },
  };
}

/** The contract over a host whose plugin `sample` is the good sample. */
export async function pluginRuntimeContract(t: Deno.TestContext, host: PluginHost): Promise<void> {
  const rt = new PluginRuntime(host, "sample");
  const state = async (id: string) => (await rt.list()).find((d) => d.id === id)?.state;
  await t.step("a domain bcd did not define is listed unmanaged", async () => {
    const d = (await rt.list()).find((x) => x.id === "hand-made");
    assert.deepEqual(d, { id: "hand-made", state: "running", record: undefined });
  });
  await t.step("define hands the plugin the tap names, and the record comes back as bcd's mark", async () => {
    await rt.define(pluginRecord());
    const d = (await rt.list()).find((x) => x.id === ID);
    assert.equal(d?.state, "stopped");
    assert.equal(d?.record?.vcpus, 2);
    const nics = (d?.record as unknown as { nics: { tap: string; bridge: string }[] }).nics;
    assert.deepEqual(nics.map((n) => [n.tap, n.bridge]), [[tapName(ID, 0), "br0"], [tapName(ID, 1), "br1"]]);
    const spec = d?.record as unknown as { sshFromHostOnly: boolean; identityRebindRef: string; placement: unknown };
    assert.deepEqual([spec.sshFromHostOnly, spec.identityRebindRef], [true, "rebind-1"]);
    assert.deepEqual(spec.placement, { cpus: "0-1", mems: "0", hugepages: "none", balloon: false });
  });
  await t.step("start, pause, resume, stop move it through its states", async () => {
    await rt.start(ID, false);
    assert.equal(await state(ID), "running");
    await rt.pause(ID);
    assert.equal(await state(ID), "paused");
    await rt.resume(ID);
    assert.equal(await state(ID), "running");
    await rt.stop(ID);
    assert.equal(await state(ID), "stopped");
    await rt.start(ID, true);
    assert.equal(await state(ID), "paused");
  });
  await t.step("delete removes it; a plugin runtime grows no disk (no snapshots, no rebind)", async () => {
    await rt.delete(ID);
    assert.equal(await state(ID), undefined);
    assert.equal((rt as InstanceRuntime).grow, undefined);
  });
}

/** The tap rule over a host whose plugin `sample` runs in mode `notaps`. */
export async function pluginRuntimeTapRule(host: PluginHost): Promise<void> {
  const rt = new PluginRuntime(host, "sample");
  await rt.define(pluginRecord());
  await assert.rejects(
    rt.start(ID, false),
    (e) =>
      e instanceof RuntimeRefused && e.reason === TAPS_MISSING &&
      e.message === `runtime did not create taps ${tapName(ID, 1)}: its network rules cannot apply`,
  );
  assert.equal((await rt.list()).find((d) => d.id === ID)?.state, "stopped", "the instance is stopped");
}
