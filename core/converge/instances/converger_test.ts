import assert from "node:assert/strict";
import { silentLogger } from "../../log/mod.ts";
import { ConvergenceEngine } from "../engine.ts";
import { InstancesConverger } from "./converger.ts";
import { MemoryRuntime } from "./fake_runtime.ts";

const vm = (id: string, runtime: string) => ({ id, runtime, state: 1, vcpus: 1, memory_bytes: 2 ** 30 });

Deno.test("instances_complete is false until every runtime was listed, and while a runtime's listing fails", async () => {
  const a = new MemoryRuntime("libvirt-kvm");
  const b = new MemoryRuntime("cloud-hypervisor");
  const conv = new InstancesConverger([a, b]);
  assert.deepEqual(conv.listing(), { instances: [], complete: false }, "nothing listed yet");
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
  const spec = { instances: [vm("on-a", "libvirt-kvm"), vm("on-b", "cloud-hypervisor")] };
  engine.hold({ generation: 1, specHash: "h1", sections: { instances: spec } });
  await engine.pass();
  assert.deepEqual(conv.listing().instances.map((i) => [i.id, i.state]), [["on-a", "RUNNING"], ["on-b", "RUNNING"]]);
  assert.equal(conv.listing().complete, true);

  b.listError = new Error("cloud-hypervisor API socket: connection refused");
  const s = await engine.pass();
  const sec = s.sections.find((x) => x.section === "instances")!;
  assert.equal(sec.state, "PROGRESSING", "the pass cannot plan without that runtime's domains");
  assert.match(sec.message, /cloud-hypervisor could not be listed: .*connection refused/);
  const l = conv.listing();
  assert.equal(l.complete, false);
  assert.deepEqual(l.instances.map((i) => i.id), ["on-a"], "what the other runtime holds is still reported");
  assert.deepEqual(b.calls.filter((c) => c.startsWith("define")), ["define on-b"], "nothing was defined again");

  b.listError = undefined;
  await engine.pass();
  assert.equal(conv.listing().complete, true);
  assert.equal(conv.listing().instances.length, 2);
});
