import assert from "node:assert/strict";
import { silentLogger } from "../../log/mod.ts";
import { ConvergenceEngine } from "../engine.ts";
import { InstancesConverger } from "./converger.ts";
import { MemoryRuntime } from "./fake_runtime.ts";

const GiB = 2 ** 30;
const vm = (id: string, state: number, disk: number) => ({
  id,
  runtime: "libvirt-kvm",
  state,
  vcpus: 1,
  memory_bytes: GiB,
  disk_bytes: disk,
});

function setup() {
  const rt = new MemoryRuntime("libvirt-kvm");
  const conv = new InstancesConverger([rt]);
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
  let gen = 0;
  const pass = async (instances: unknown[]) => {
    engine.hold({ generation: ++gen, specHash: `h${gen}`, sections: { instances: { instances } } });
    return (await engine.pass()).sections.find((x) => x.section === "instances")!;
  };
  return { rt, conv, pass };
}

Deno.test("the converger plans a grow when the spec's disk_bytes rises: running or stopped, once, after a stop and before a start", async (t) => {
  const { rt, conv, pass } = setup();
  await pass([vm("a", 1, 10 * GiB), vm("b", 1, 10 * GiB)]);
  assert.deepEqual(rt.calls.filter((c) => c.startsWith("grow")), [], "the define made the disk; no grow");
  await t.step("a running domain grows where it runs", async () => {
    assert.equal((await pass([vm("a", 1, 20 * GiB), vm("b", 1, 10 * GiB)])).state, "CONVERGED");
    assert.deepEqual(rt.calls.filter((c) => c.startsWith("grow")), [`grow a ${20 * GiB} running`]);
    await pass([vm("a", 1, 20 * GiB), vm("b", 1, 10 * GiB)]);
    assert.equal(rt.calls.filter((c) => c.startsWith("grow")).length, 1, "an unchanged spec plans no grow");
  });
  await t.step("a grow with a stop is done stopped; with a start, before the start", async () => {
    rt.calls.length = 0;
    await pass([vm("a", 3, 30 * GiB), vm("b", 1, 10 * GiB)]);
    assert.deepEqual(rt.calls, ["stop a", `grow a ${30 * GiB} stopped`]);
    rt.calls.length = 0;
    await pass([vm("a", 1, 40 * GiB), vm("b", 1, 10 * GiB)]);
    assert.deepEqual(rt.calls, [`grow a ${40 * GiB} stopped`, "start a"]);
  });
  await t.step("a smaller disk fails the instance disk-shrink and leaves it as it is", async () => {
    const sec = await pass([vm("a", 1, 40 * GiB), vm("b", 1, 5 * GiB)]);
    assert.equal(sec.state, "FAILED");
    assert.match(sec.message, /b: b: the disk is \d+ bytes; \d+ would shrink it/);
    assert.equal(conv.report().find((r) => r.id === "b")?.message.startsWith("disk-shrink: "), true);
    assert.equal(rt.disks.get("b"), 10 * GiB);
    assert.equal(rt.domains.get("b")?.state, "running");
  });
});
