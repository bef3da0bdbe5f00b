import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import { ConvergenceEngine } from "../../core/converge/engine.ts";
import { FileRuntime } from "./file_runtime.ts";
import { InstancesConverger } from "../../core/converge/instances/mod.ts";

const spec = (instances: Record<string, unknown>[]) => ({ instances });
const vm = (id: string, state: number, extra: Record<string, unknown> = {}) => ({
  id,
  runtime: "sim",
  state,
  vcpus: 2,
  memory_bytes: 2 ** 30,
  ...extra,
});

async function setup() {
  const dir = await Deno.makeTempDir({ prefix: "bcd-inst-" });
  const rt = new FileRuntime(dir);
  const conv = new InstancesConverger([rt]);
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
  let gen = 0;
  const pass = async (instances: Record<string, unknown>[]) => {
    engine.hold({ generation: ++gen, specHash: `h${gen}`, sections: { instances: spec(instances) } });
    return (await engine.pass()).sections.find((s) => s.section === "instances")!;
  };
  return { dir, rt, conv, pass };
}

Deno.test("instances are defined and moved to their desired state, and a second pass plans nothing", async () => {
  const { dir, rt, conv, pass } = await setup();
  try {
    const s = await pass([vm("a", 1), vm("b", 2), vm("c", 3)]);
    assert.equal(s.state, "CONVERGED");
    assert.deepEqual((await rt.list()).map((d) => [d.id, d.state]), [["a", "running"], ["b", "paused"], [
      "c",
      "stopped",
    ]]);
    assert.equal(conv.plan(spec([vm("a", 1), vm("b", 2), vm("c", 3)]), await conv.observe()).length, 0);
    assert.equal((await pass([vm("a", 2), vm("b", 1), vm("c", 1)])).state, "CONVERGED");
    assert.deepEqual((await rt.list()).map((d) => d.state), ["paused", "running", "running"]);
    assert.deepEqual(conv.report().map((r) => r.state), ["PAUSED", "RUNNING", "RUNNING"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a managed domain no longer desired is deleted; DELETED removes it too", async () => {
  const { dir, rt, pass } = await setup();
  try {
    await pass([vm("a", 1), vm("b", 1)]);
    await pass([vm("a", 4)]);
    assert.deepEqual(await rt.list(), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an unmanaged domain is reported and never touched, and an instance naming it fails", async () => {
  const { dir, rt, conv, pass } = await setup();
  try {
    await Deno.writeTextFile(`${dir}/foreign.json`, JSON.stringify({ state: "running" }));
    assert.equal((await pass([])).state, "CONVERGED");
    assert.deepEqual((await rt.list()).map((d) => d.id), ["foreign"]);
    assert.equal(conv.report()[0]?.managed, false);
    const s = await pass([vm("foreign", 3)]);
    assert.equal(s.state, "FAILED");
    assert.match(s.message, /did not define/);
    assert.equal((await rt.list())[0]?.state, "running", "still running: never stopped");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an unknown runtime or a refused size fails the instance terminally, and the report says why", async () => {
  const { dir, conv, pass } = await setup();
  try {
    const s = await pass([vm("x", 1, { runtime: "firecracker" }), vm("y", 1, { vcpus: 0 })]);
    assert.equal(s.state, "FAILED");
    assert.equal(s.reason, "InstanceFailed");
    const r = conv.report();
    assert.match(r.find((i) => i.id === "x")!.message, /unknown-runtime/);
    assert.match(r.find((i) => i.id === "y")!.message, /invalid-size/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("domains outlive the converger: a new one over the same directory sees them", async () => {
  const { dir, pass } = await setup();
  try {
    await pass([vm("a", 1)]);
    const again = new InstancesConverger([new FileRuntime(dir)]);
    assert.deepEqual(again.plan(spec([vm("a", 1)]), await again.observe()), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an instance id listed twice is refused invalid-instance, like an allocation listed twice; the first entry stands", async () => {
  const { dir, rt, pass } = await setup();
  try {
    const s = await pass([vm("a", 1), vm("a", 3)]);
    assert.equal(s.state, "FAILED");
    assert.match(s.message ?? "", /instance "a" is listed twice/);
    assert.deepEqual((await rt.list()).map((d) => [d.id, d.state]), [["a", "running"]], "the first entry's state");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
