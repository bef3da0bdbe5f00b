import assert from "node:assert/strict";
import { bcd, encodeMessage } from "../../proto/mod.ts";
import { Journal } from "../journal/mod.ts";
import { silentLogger } from "../log/mod.ts";
import type { NodeAgent, NodeAgentOptions } from "./node_agent.ts";
import { startOfflineAgent } from "./node_agent_testing.ts";
import type { NodeFrameInit } from "./client.ts";
import { InstancesConverger } from "../converge/instances/mod.ts";
import { MemoryRuntime } from "../converge/instances/fake_runtime.ts";
import { IdentityRebinder } from "../converge/instances/identity_rebind.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";
import { VolumeKeeper } from "../volumes/keeper.ts";
import { MemoryVolumeStore } from "../volumes/store.ts";

/** An offline agent over a fresh journal in a temp dir holding `spec` (an encoded DesiredStateBody) at `generation`. */
async function withAgent(
  generation: number,
  spec: Uint8Array,
  more: Partial<NodeAgentOptions>,
  body: (agent: NodeAgent) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "bcd-agent-status-test-" });
  const journal = await Journal.open({ dataDir: dir, bootId: "boot-1", nodeId: "n-1" });
  try {
    await journal.putSpec({ generation, bytes: spec, hash: `h${generation}` });
    const agent = await startOfflineAgent(journal, more);
    try {
      await agent.startPass; // the held spec's first pass, which start no longer waits for
      await body(agent);
    } finally {
      await agent.stop();
    }
  } finally {
    await journal.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** The status report the agent sends when a session is established. */
async function statusOnConnect(agent: NodeAgent) {
  const frames: NodeFrameInit[] = [];
  await agent.established({ send: (f) => (frames.push(f), true), epoch: 1 });
  agent.disconnected("test");
  const s = frames.find((f) => f.status)?.status;
  assert.ok(s, "a status report is sent");
  return s;
}

Deno.test("the node reports a NodeSpec section it does not know as UNSUPPORTED with its field number, offline too", async () => {
  const head = encodeMessage(bcd.v1.DesiredStateBody, { node_id: "n-1", generation: 7, spec_hash: "h7" });
  const spec = [0x4a, 0x02, 0x08, 0x01]; // NodeSpec field 9 (a section from a newer schema), not empty
  await withAgent(7, new Uint8Array([...head, 0x22, spec.length, ...spec]), {}, async (agent) => {
    const s = agent.engine.snapshot();
    const nine = s.sections.find((x) => x.section === "9");
    assert.deepEqual([nine?.state, nine?.reason], ["UNSUPPORTED", "9"]);
    assert.equal(s.observed_generation, 7);
    assert.ok(s.conditions.some((c) => c.type === "SectionUnsupported" && c.subject === "9" && c.reason === "9"));
    const sent = await statusOnConnect(agent);
    assert.deepEqual(sent.sections?.filter((x) => x.section === "9").map((x) => x.reason), ["9"]);
  });
});

Deno.test("instances_complete reports the truth: false while a runtime's listing fails", async () => {
  const rt = new MemoryRuntime("libvirt-kvm");
  const conv = new InstancesConverger([rt]);
  const spec = encodeMessage(bcd.v1.DesiredStateBody, {
    node_id: "n-1",
    generation: 3,
    spec_hash: "h3",
    full: { instances: { instances: [{ id: "vm-1", runtime: "libvirt-kvm", state: 1, vcpus: 1 }] } },
  });
  rt.listError = new Error("virsh: failed to connect to the hypervisor");
  await withAgent(3, spec, { convergers: () => [conv], instances: () => conv.listing() }, async (agent) => {
    const broken = await statusOnConnect(agent);
    assert.equal(broken.instances_complete, false);
    rt.listError = undefined;
    await agent.engine.pass();
    const fixed = await statusOnConnect(agent);
    assert.equal(fixed.instances_complete, true);
    assert.deepEqual(fixed.instances?.map((i) => i.id), ["vm-1"]);
  });
});

Deno.test("StatusReport.volume_storage carries the volume store's five fields on a host that keeps volumes", async () => {
  const rt = new MemoryRuntime("libvirt-kvm");
  const store = new MemoryVolumeStore({ totalBytes: 100 * 2 ** 30, availableBytes: 60 * 2 ** 30 });
  const conv = new InstancesConverger([rt], { volumes: new VolumeKeeper(store) });
  const spec = encodeMessage(bcd.v1.DesiredStateBody, {
    node_id: "n-1",
    generation: 4,
    spec_hash: "h4",
    full: { instances: { volumes: [{ id: "v", serial: "s", size_bytes: 2 ** 30 }] } },
  });
  await withAgent(4, spec, { convergers: () => [conv], instances: () => conv.listing() }, async (agent) => {
    await agent.engine.pass();
    const s = await statusOnConnect(agent);
    const n = (v: unknown) => Number(v);
    const vs = s.volume_storage!;
    assert.deepEqual(
      [vs.total_bytes, vs.available_bytes, vs.reserved_bytes, vs.committed_bytes, vs.outstanding_bytes].map(n),
      [100 * 2 ** 30, 60 * 2 ** 30, 5 * 2 ** 30, 2 ** 30, 2 ** 30],
    );
  });
});

Deno.test("InstanceStatus.identity_rebound_ref carries the reference once the guest answered it (000 §Identity rebind)", async () => {
  const rt = new MemoryRuntime("libvirt-kvm");
  rt.answering.add("vm-r");
  const store = { records: {} as Record<string, string> };
  const rebinder = new IdentityRebinder({
    store: {
      load: () => Promise.resolve({ ...store.records }),
      save: (r) => Promise.resolve(void (store.records = { ...r })),
    },
    secrets: {
      fetch: () =>
        Promise.resolve({
          status: "ok" as const,
          secret: new TextEncoder().encode('{"v":1,"account":"ubuntu","principals":"exec"}'),
        }),
    },
    runtime: () => rt,
    clock: new FakeClock(),
    log: silentLogger(),
  });
  const conv = new InstancesConverger([rt], { rebinder });
  const vm = (id: string, ref: string) => ({
    id,
    runtime: "libvirt-kvm",
    state: 1,
    vcpus: 1,
    identity_rebind_ref: ref,
  });
  const spec = encodeMessage(bcd.v1.DesiredStateBody, {
    node_id: "n-1",
    generation: 4,
    spec_hash: "h4",
    full: { instances: { instances: [vm("vm-r", "rb-1"), vm("vm-s", "rb-2")] } },
  });
  await withAgent(4, spec, { convergers: () => [conv], instances: () => conv.listing() }, async (agent) => {
    await agent.engine.pass();
    await rebinder.settled();
    const s = await statusOnConnect(agent);
    const byId = Object.fromEntries((s.instances ?? []).map((i) => [i.id, i.identity_rebound_ref ?? ""]));
    assert.deepEqual(byId, { "vm-r": "rb-1", "vm-s": "" }, "a silent guest reports nothing");
  });
});
