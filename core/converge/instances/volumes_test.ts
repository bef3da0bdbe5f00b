import assert from "node:assert/strict";
import { silentLogger } from "../../log/mod.ts";
import { ConvergenceEngine } from "../engine.ts";
import { InstancesConverger } from "./converger.ts";
import { MemoryRuntime } from "./fake_runtime.ts";
import { VolumeKeeper } from "../../volumes/keeper.ts";
import { MemoryVolumeStore } from "../../volumes/store.ts";
import { DetachPending } from "./runtime.ts";

const GiB = 2 ** 30;
const MiB = 2 ** 20;
const vm = (id: string, state: number, volumes: [string, boolean?][] = []) => ({
  id,
  runtime: "libvirt-kvm",
  state,
  vcpus: 1,
  memory_bytes: GiB,
  volumes: volumes.map(([volume_id, read_only]) => ({ volume_id, read_only: !!read_only })),
});
const vol = (id: string, size = 64 * MiB, serial = `s-${id}`) => ({ id, serial, size_bytes: size });

function setup(store = new MemoryVolumeStore()) {
  const rt = new MemoryRuntime("libvirt-kvm");
  const keeper = new VolumeKeeper(store);
  const conv = new InstancesConverger([rt], { volumes: keeper });
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
  let gen = 0;
  const pass = async (instances: unknown[], volumes: unknown[]) => {
    engine.hold({ generation: ++gen, specHash: `h${gen}`, sections: { instances: { instances, volumes } } });
    return (await engine.pass()).sections.find((x) => x.section === "instances")!;
  };
  const msg = (id: string) => conv.report().find((r) => r.id === id)?.message ?? "";
  return { rt, conv, pass, store, keeper, msg };
}

Deno.test("volumes are created before any define and attached in spec order with their serials", async () => {
  const { rt, store, pass, conv } = setup();
  const sec = await pass([vm("a", 1, [["v2"], ["v1", true]])], [vol("v1"), vol("v2")]);
  assert.equal(sec.state, "CONVERGED");
  assert.deepEqual([...store.volumes.keys()], ["v1", "v2"]);
  assert.deepEqual(store.calls.slice(0, 2), [`create v1 ${64 * MiB}`, `create v2 ${64 * MiB}`]);
  assert.deepEqual(rt.domains.get("a")?.record?.volumes, [
    { volumeId: "v2", serial: "s-v2", readOnly: false },
    { volumeId: "v1", serial: "s-v1", readOnly: true },
  ]);
  assert.deepEqual(conv.listing().volumeStorage?.committedBytes, 128 * MiB);
});

Deno.test("one writer: a second writer is refused volume-busy; the first in spec order keeps it", async (t) => {
  await t.step("two new writers in one pass: the first starts, the second is refused", async () => {
    const { rt, pass, msg } = setup();
    const sec = await pass([vm("a", 1, [["v"]]), vm("b", 1, [["v"]])], [vol("v")]);
    assert.equal(sec.state, "FAILED");
    assert.equal(rt.domains.get("a")?.state, "running");
    assert.equal(rt.domains.get("b")?.state, "stopped");
    assert.match(msg("b"), /^volume-busy: volume v is open read-write in instance a; one writer per volume$/);
  });
  await t.step("readers share; a writer beside running readers is refused", async () => {
    const { rt, pass, msg } = setup();
    await pass([vm("a", 1, [["v", true]]), vm("b", 1, [["v", true]]), vm("c", 1, [["v"]])], [vol("v")]);
    assert.equal(rt.domains.get("a")?.state, "running");
    assert.equal(rt.domains.get("b")?.state, "running");
    assert.equal(rt.domains.get("c")?.state, "stopped");
    assert.match(msg("c"), /open read-only in instance a; a writer needs it alone/);
  });
  await t.step("a handover in one pass: the stop lets go before the start takes it", async () => {
    const { rt, pass } = setup();
    await pass([vm("a", 1, [["v"]]), vm("b", 3, [["v"]])], [vol("v")]);
    rt.calls.length = 0;
    const sec = await pass([vm("a", 3, [["v"]]), vm("b", 1, [["v"]])], [vol("v")]);
    assert.equal(sec.state, "CONVERGED");
    assert.deepEqual(rt.calls, ["stop a", "start b"]);
  });
  await t.step("a stop that failed never lets a second writer in", async () => {
    const { rt, pass, msg } = setup();
    await pass([vm("a", 1, [["v"]]), vm("b", 3, [["v"]])], [vol("v")]);
    rt.stop = () => Promise.reject(new Error("virsh shutdown failed"));
    const sec = await pass([vm("a", 3, [["v"]]), vm("b", 1, [["v"]])], [vol("v")]);
    assert.equal(sec.state, "PROGRESSING");
    assert.equal(rt.domains.get("b")?.state, "stopped");
    assert.match(msg("b"), /volume-busy: volume v is open read-write in instance a/);
  });
  await t.step(
    "two running holders (found running): the later in spec order is stopped and fails volume-busy",
    async () => {
      const { rt, pass, msg } = setup();
      await pass([vm("a", 1, [["v"]])], [vol("v")]);
      // A domain defined elsewhere (a crash between passes) runs with the same volume.
      rt.domains.set("b", { state: "running", record: { ...rt.domains.get("a")!.record!, id: "b" } });
      await pass([vm("a", 1, [["v"]]), vm("b", 1, [["v"]])], [vol("v")]);
      assert.equal(rt.domains.get("a")?.state, "running");
      assert.equal(rt.domains.get("b")?.state, "stopped");
      assert.match(msg("b"), /^volume-busy: /);
    },
  );
});

Deno.test("spec-level refusals keep instances from starting but never stop a running VM", async (t) => {
  await t.step("a volume the section does not list fails volume-unlisted", async () => {
    const { rt, pass, msg } = setup();
    const sec = await pass([vm("a", 1, [["nope"]])], []);
    assert.equal(sec.state, "FAILED");
    assert.equal(rt.domains.has("a"), false);
    assert.match(
      msg("a"),
      /^volume-unlisted: instance a attaches volume "nope", which the instances section does not list$/,
    );
  });
  await t.step("a shrink fails the instances attaching it; the running one keeps running", async () => {
    const { rt, pass, msg, store } = setup();
    await pass([vm("a", 1, [["v"]])], [vol("v", 64 * MiB)]);
    const sec = await pass([vm("a", 1, [["v"]]), vm("b", 1, [["v", true]])], [vol("v", 32 * MiB)]);
    assert.equal(sec.state, "FAILED");
    assert.equal(rt.domains.get("a")?.state, "running");
    assert.equal(rt.domains.has("b"), false);
    assert.match(msg("b"), /^volume-shrink: volume v is 67108864 bytes; 33554432 would shrink it/);
    assert.equal(store.volumes.get("v")?.sizeBytes, 64 * MiB);
  });
  await t.step(
    "a volume that does not fit waits (PROGRESSING) with the seed's message, then starts once it fits",
    async () => {
      const store = new MemoryVolumeStore({ totalBytes: 100 * GiB, availableBytes: 6 * GiB });
      const { rt, pass, msg } = setup(store);
      const sec = await pass([vm("a", 1, [["v"]])], [vol("v", 2 * GiB)]);
      assert.equal(sec.state, "PROGRESSING");
      assert.equal(rt.domains.has("a"), false);
      assert.equal(
        msg("a"),
        "volume v: 2048 MiB needed, 1024 MiB can still be promised to volumes on this host (6144 MiB free, 5120 MiB " +
          "reserved, 0 MiB promised to volumes' unwritten space)",
      );
      store.figures = { totalBytes: 100 * GiB, availableBytes: 10 * GiB };
      assert.equal((await pass([vm("a", 1, [["v"]])], [vol("v", 2 * GiB)])).state, "CONVERGED");
      assert.equal(rt.domains.get("a")?.state, "running");
    },
  );
  await t.step("without a keeper an instance with volumes fails volumes-unsupported", async () => {
    const rt = new MemoryRuntime("libvirt-kvm");
    const conv = new InstancesConverger([rt]);
    const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
    engine.hold({
      generation: 1,
      specHash: "h",
      sections: { instances: { instances: [vm("a", 1, [["v"]])], volumes: [vol("v")] } },
    });
    await engine.pass();
    assert.match(
      conv.report().find((r) => r.id === "a")?.message ?? "",
      /^volumes-unsupported: this host keeps no volumes/,
    );
  });
});

Deno.test("a grown volume is resized live in every domain holding it; a changed attachment list is applied", async (t) => {
  const { rt, pass, store } = setup();
  await pass([vm("a", 1, [["v", true]]), vm("b", 1, [["v", true]]), vm("c", 3, [["v", true]])], [vol("v")]);
  await t.step("growth: the file first, then each running holder", async () => {
    rt.calls.length = 0;
    await pass([vm("a", 1, [["v", true]]), vm("b", 1, [["v", true]]), vm("c", 3, [["v", true]])], [
      vol("v", 128 * MiB),
    ]);
    assert.equal(store.volumes.get("v")?.sizeBytes, 128 * MiB);
    assert.deepEqual(rt.calls, [`growVolume a v ${128 * MiB}`, `growVolume b v ${128 * MiB}`]);
  });
  await t.step("a new attachment is hot-plugged running and written into a stopped definition", async () => {
    rt.calls.length = 0;
    await pass([vm("a", 1, [["v", true], ["w"]]), vm("b", 1, [["v", true]]), vm("c", 3, [])], [
      vol("v", 128 * MiB),
      vol("w"),
    ]);
    assert.deepEqual(rt.calls.sort(), ["volumes a running [v,w]", "volumes c stopped []"]);
  });
  await t.step("a live attach of a volume another domain writes is refused and the VM keeps running", async () => {
    const sec = await pass(
      [vm("a", 1, [["v", true], ["w"]]), vm("b", 1, [["v", true], ["w"]]), vm("c", 3, [])],
      [vol("v", 128 * MiB), vol("w")],
    );
    assert.equal(sec.state, "FAILED");
    assert.equal(rt.domains.get("b")?.state, "running");
    assert.deepEqual(rt.domains.get("b")?.record?.volumes?.map((v) => v.volumeId), ["v"]);
  });
});

Deno.test("an unlisted volume is destroyed after the pass, never while a domain holds it open", async () => {
  const { rt, pass, store } = setup();
  await pass([vm("a", 1, [["v"]]), vm("b", 3, [["w"]])], [vol("v"), vol("w"), vol("x")]);
  // x is unlisted and unattached: destroyed. v is unlisted but its instance still attaches it (refused, kept).
  await pass([vm("a", 1, [["v"]]), vm("b", 3, [["w"]])], [vol("w")]);
  assert.deepEqual([...store.volumes.keys()].sort(), ["v", "w"]);
  assert.deepEqual(store.punched, ["x"]);
  // The spec no longer attaches v, but a still runs with it open (the detach is refused here): kept.
  rt.setVolumes = () => Promise.reject(new Error("detach failed"));
  await pass([vm("a", 1, []), vm("b", 3, [["w"]])], [vol("w")]);
  assert.equal(store.volumes.has("v"), true);
  // Its VM deleted in the same pass: it goes in that pass.
  await pass([vm("b", 3, [["w"]])], [vol("w")]);
  assert.deepEqual([...store.volumes.keys()], ["w"]);
  assert.equal(rt.domains.has("a"), false);
});

Deno.test("after a restart the tracker comes from the running domains: a new writer first in spec order is still refused", async () => {
  const store = new MemoryVolumeStore();
  const first = setup(store);
  await first.pass([vm("a", 1, [["v"]])], [vol("v")]);
  // A new process: a fresh keeper and converger over the same runtime and store.
  const keeper = new VolumeKeeper(store);
  const conv = new InstancesConverger([first.rt], { volumes: keeper });
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
  engine.hold({
    generation: 9,
    specHash: "h9",
    sections: { instances: { instances: [vm("b", 1, [["v"]]), vm("a", 1, [["v"]])], volumes: [vol("v")] } },
  });
  await engine.pass();
  assert.equal(first.rt.domains.get("a")?.state, "running", "the running holder keeps its volume");
  assert.equal(first.rt.domains.get("b")?.state, "stopped");
  assert.match(
    conv.report().find((r) => r.id === "b")?.message ?? "",
    /^volume-busy: volume v is open read-write in instance a/,
  );
});

Deno.test("volume_storage is refreshed on a pass that changes nothing else", async () => {
  const store = new MemoryVolumeStore({ totalBytes: 100 * GiB, availableBytes: 50 * GiB });
  const { pass, conv } = setup(store);
  await pass([], [vol("v", GiB)]);
  assert.equal(conv.listing().volumeStorage?.outstandingBytes, GiB);
  store.write("v", GiB / 4);
  store.figures = { totalBytes: 100 * GiB, availableBytes: 40 * GiB };
  await pass([], [vol("v", GiB)]);
  assert.deepEqual(
    [conv.listing().volumeStorage?.availableBytes, conv.listing().volumeStorage?.outstandingBytes],
    [40 * GiB, GiB * 3 / 4],
  );
});

Deno.test("a hot-unplug the guest has not acknowledged (detach-pending) keeps the volume's one writer until it lets go; retried, never a failure of the instance", async () => {
  const { rt, pass, msg } = setup();
  await pass([vm("a", 1, [["v"]])], [vol("v")]);
  const setVolumes = rt.setVolumes.bind(rt);
  // The runtime's answer while the guest still holds the disk: its record keeps the volume.
  rt.setVolumes = (id) => Promise.reject(new DetachPending(`${id}: the guest has not released vol-v (volume v) yet`));
  const held = await pass([vm("a", 1, []), vm("b", 1, [["v"]])], [vol("v")]);
  assert.equal(held.state, "PROGRESSING");
  assert.equal(rt.domains.get("a")?.state, "running");
  assert.deepEqual(rt.domains.get("a")?.record?.volumes?.map((x) => x.volumeId), ["v"]);
  assert.equal(msg("a"), "", "the detaching instance has not failed");
  assert.equal(rt.domains.get("b")?.state, "stopped");
  assert.match(msg("b"), /^volume-busy: volume v is open read-write in instance a/);
  // The guest let go: the unplug goes through, and the next writer gets the volume.
  rt.setVolumes = setVolumes;
  await pass([vm("a", 1, []), vm("b", 1, [["v"]])], [vol("v")]);
  assert.deepEqual(rt.domains.get("a")?.record?.volumes, []);
  assert.equal(rt.domains.get("b")?.state, "running");
});
