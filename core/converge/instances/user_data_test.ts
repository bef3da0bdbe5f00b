import assert from "node:assert/strict";
import { silentLogger } from "../../log/mod.ts";
import { ConvergenceEngine } from "../engine.ts";
import { InstancesConverger } from "./converger.ts";
import { MemoryRuntime } from "./fake_runtime.ts";
import type { SecretAnswer, SecretQuery, SecretSource } from "./user_data.ts";

const vm = (id: string, ref: string) => ({
  id,
  allocation_id: `alloc-${id}`,
  runtime: "libvirt-kvm",
  state: 1,
  vcpus: 1,
  memory_bytes: 2 ** 30,
  user_data_ref: ref,
});

class Broker implements SecretSource {
  readonly asked: SecretQuery[] = [];
  answer: SecretAnswer = { status: "unavailable", message: "no session to the control plane" };
  fetch(q: SecretQuery): Promise<SecretAnswer> {
    this.asked.push(q);
    return Promise.resolve(this.answer);
  }
}

function setup(secrets?: SecretSource) {
  const rt = new MemoryRuntime("libvirt-kvm");
  const wakes: number[] = [];
  const conv = new InstancesConverger([rt], secrets ? { secrets, wake: () => wakes.push(1) } : {});
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
  let gen = 0;
  const pass = async (instances: unknown[]) => {
    engine.hold({ generation: ++gen, specHash: `h${gen}`, sections: { instances: { instances } } });
    const s = await engine.pass();
    return s.sections.find((x) => x.section === "instances")!;
  };
  /** Two passes: the first sends the SecretRequest (beside the pass), the next takes its answer. */
  const settle = async (instances: unknown[]) => {
    const first = await pass(instances);
    assert.equal(first.state, "PROGRESSING", "the first pass waits for the answer");
    assert.match(first.message, /waiting for the user data or snapshot: SecretRequest sent/);
    return await pass(instances);
  };
  return { rt, conv, pass, settle, wakes };
}

Deno.test("user data is fetched with a SecretRequest bound to the allocation before the define, and goes into the seed", async () => {
  const broker = new Broker();
  broker.answer = { status: "ok", secret: new TextEncoder().encode("#cloud-config\nhostname: a\n") };
  const { rt, pass, settle, wakes } = setup(broker);
  const sec = await settle([vm("i1", "ud-ref-1")]);
  assert.equal(sec.state, "CONVERGED");
  assert.equal(wakes.length, 1, "the answer woke the loop");
  assert.deepEqual(broker.asked, [{
    purpose: "user-data",
    ref: "ud-ref-1",
    allocationId: "alloc-i1",
    instanceId: "i1",
  }]);
  const launch = rt.domains.get("i1")?.record?.launch;
  assert.equal(new TextDecoder().decode(launch?.userData ?? new Uint8Array()), "#cloud-config\nhostname: a\n");
  assert.equal(rt.domains.get("i1")?.state, "running");
  await pass([vm("i1", "ud-ref-1")]);
  assert.equal(broker.asked.length, 1, "a defined instance's user data is not fetched again");
});

Deno.test("refused user data fails only that instance (user-data-refused), is not asked again, and a new reference is", async () => {
  const broker = new Broker();
  broker.answer = { status: "refused", message: "allocation alloc-i1 is not bound to this node" };
  const { rt, conv, pass, settle } = setup(broker);
  const sec = await settle([vm("i1", "ud-ref-1"), { ...vm("i2", ""), user_data_ref: "" }]);
  assert.equal(sec.state, "FAILED");
  assert.equal(sec.reason, "InstanceFailed");
  assert.match(sec.message, /i1: the control plane refused its user data: allocation alloc-i1 is not bound/);
  assert.equal(rt.domains.has("i1"), false, "no domain without its user data");
  assert.equal(rt.domains.get("i2")?.state, "running", "the other instance runs");
  const r = conv.report().find((x) => x.id === "i1");
  assert.equal(r?.state, "ERROR");
  assert.match(r?.message ?? "", /^user-data-refused: /);
  await pass([vm("i1", "ud-ref-1"), { ...vm("i2", ""), user_data_ref: "" }]);
  assert.equal(broker.asked.length, 1, "a refused reference is not asked again");
  broker.answer = { status: "ok", secret: new Uint8Array([1]) };
  assert.equal((await settle([vm("i1", "ud-ref-2")])).state, "CONVERGED", "a new reference is asked for");
  assert.equal(broker.asked.length, 2);
});

Deno.test("an unavailable broker keeps the section PROGRESSING and the instance waiting; it is defined once the broker answers", async () => {
  const broker = new Broker();
  const { rt, conv, settle } = setup(broker);
  const sec = await settle([vm("i1", "ud-ref-1")]);
  assert.equal(sec.state, "PROGRESSING");
  assert.equal(sec.reason, "InstanceWaiting");
  assert.match(sec.message, /i1: waiting for the user data or snapshot: no session to the control plane/);
  assert.equal(rt.domains.size, 0);
  assert.equal(conv.report().find((x) => x.id === "i1")?.state, "PENDING");
  broker.answer = { status: "ok", secret: new Uint8Array([1, 2]) };
  assert.equal((await settle([vm("i1", "ud-ref-1")])).state, "CONVERGED");
  assert.deepEqual([...rt.domains.get("i1")?.record?.launch?.userData ?? []], [1, 2]);
});

Deno.test("without a broker an instance with a user_data_ref waits; user data beyond the bound fails it", async () => {
  const none = setup();
  const sec = await none.pass([vm("i1", "ud-ref-1")]);
  assert.equal(sec.state, "PROGRESSING");
  assert.match(sec.message, /no SecretRequest broker/);
  const broker = new Broker();
  broker.answer = { status: "ok", secret: new Uint8Array(1024 * 1024 + 1) };
  const big = setup(broker);
  const s2 = await big.settle([vm("i1", "ud-ref-1")]);
  assert.equal(s2.state, "FAILED");
  assert.match(s2.message, /1048577 bytes; at most 1048576/);
});

Deno.test("the SecretRequest runs beside the pass: a pass never waits on the answer, which the next pass takes", async () => {
  let answer: (a: SecretAnswer) => void = () => {};
  const slow: SecretSource = { fetch: () => new Promise((r) => answer = r) };
  const { rt, pass, wakes } = setup(slow);
  const first = await pass([vm("i1", "ud-ref-1")]);
  assert.equal(first.state, "PROGRESSING", "the pass ended while the request is open");
  assert.match((await pass([vm("i1", "ud-ref-1")])).message, /SecretRequest sent/, "still open: still waiting");
  assert.equal(wakes.length, 0);
  answer({ status: "ok", secret: new Uint8Array([9]) });
  await new Promise((r) => setTimeout(r, 0)); // the answer's promise chain settles (microtasks), no wall time
  assert.equal(wakes.length, 1);
  assert.equal((await pass([vm("i1", "ud-ref-1")])).state, "CONVERGED");
  assert.deepEqual([...rt.domains.get("i1")?.record?.launch?.userData ?? []], [9]);
});

Deno.test("an instance waiting for its user data keeps the section PROGRESSING while another instance failed, so the wait is retried", async () => {
  const broker = new Broker();
  const { pass, conv } = setup(broker);
  const spec = [vm("i1", "ud-ref-1"), { ...vm("bad", ""), runtime: "no-such-runtime" }];
  await pass(spec);
  const sec = await pass(spec);
  assert.equal(sec.state, "PROGRESSING", "the unavailable broker is retried on the next pass");
  assert.match(sec.message, /i1: waiting for the user data or snapshot: no session/);
  assert.match(sec.message, /bad: runtime "no-such-runtime"/);
  assert.equal(conv.report().find((r) => r.id === "bad")?.state, "ERROR");
  broker.answer = { status: "ok", secret: new Uint8Array([1]) };
  await pass(spec);
  assert.equal((await pass(spec)).state, "FAILED", "once nothing waits, the failed instance fails the section");
});
