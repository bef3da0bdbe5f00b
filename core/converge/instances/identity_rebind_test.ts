/** Identity rebind through the instances converger (000 §Identity rebind), on a fake runtime and a fake clock. */
import assert from "node:assert/strict";
import { silentLogger } from "../../log/mod.ts";
import { ConvergenceEngine } from "../engine.ts";
import { InstancesConverger } from "./converger.ts";
import { MemoryRuntime } from "./fake_runtime.ts";
import { IdentityRebinder, REBIND_RETRY_MS } from "./identity_rebind.ts";
import type { SecretAnswer, SecretQuery } from "./user_data.ts";
import { FakeClock } from "../../../fixtures/clock/fake_clock.ts";
import { REBOUND_FILE, ReboundFile } from "../../rebind/mod.ts";

const vm = (id: string, ref: string) => ({
  id,
  runtime: "libvirt-kvm",
  allocation_id: `alloc-${id}`,
  state: 1,
  vcpus: 1,
  memory_bytes: 2 ** 30,
  identity_rebind_ref: ref,
});
const BUNDLE = new TextEncoder().encode(JSON.stringify({ v: 1, account: "ubuntu", principals: "exec-r1" }));

function setup(dir: string, rt = new MemoryRuntime("libvirt-kvm")) {
  const clock = new FakeClock();
  const asked: SecretQuery[] = [];
  const answers = new Map<string, SecretAnswer>();
  const secrets = {
    fetch: (q: SecretQuery) => {
      asked.push(q);
      return Promise.resolve(answers.get(q.ref) ?? { status: "ok" as const, secret: BUNDLE.slice() });
    },
  };
  let wakes = 0;
  const rebinder = new IdentityRebinder({
    store: new ReboundFile(dir),
    secrets,
    runtime: (name) => name === rt.name ? rt : undefined,
    clock,
    log: silentLogger(),
    wake: () => void wakes++,
  });
  const conv = new InstancesConverger([rt], { secrets, rebinder });
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
  let gen = 0;
  const hold = (instances: Record<string, unknown>[]) =>
    engine.hold({ generation: ++gen, specHash: `h${gen}`, sections: { instances: { instances } } });
  const pass = async () => {
    await engine.pass();
    await rebinder.settled();
  };
  const ref = (id: string) => conv.report().find((r) => r.id === id)?.identityReboundRef;
  return { rt, clock, asked, answers, rebinder, conv, hold, pass, ref, wakes: () => wakes };
}

Deno.test("identity rebind: an answering guest is rebound once, recorded in instances-rebound.json and reported; a restart reports it without a new try; an unlisted instance is pruned", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-rebind-conv-" });
  try {
    const h = setup(dir);
    h.rt.answering.add("r1");
    h.hold([vm("r1", "rb-1"), vm("plain", "")]);
    await h.pass();
    assert.equal(h.ref("r1"), "rb-1", "the define's pass tried it once the domain ran");
    assert.equal(h.ref("plain"), "");
    assert.deepEqual(
      h.asked.map((q) => [q.purpose, q.ref, q.allocationId, q.instanceId]),
      [["identity-rebind", "rb-1", "alloc-r1", "r1"]],
      "one SecretRequest bound to the instance's allocation",
    );
    assert.equal(h.rt.rebinds.length, 1);
    const img = new TextDecoder().decode(h.rt.rebinds[0]!.image.subarray(0, 2048));
    assert.match(img, new RegExp(h.rt.rebinds[0]!.nonce), "the image carries the try's nonce");
    assert.deepEqual(JSON.parse(await Deno.readTextFile(`${dir}/${REBOUND_FILE}`)), { r1: "rb-1" });
    await h.pass();
    assert.equal(h.rt.rebinds.length, 1, "never again for the same reference");

    const again = setup(dir, h.rt);
    again.hold([vm("r1", "rb-1")]);
    await again.pass();
    assert.equal(again.ref("r1"), "rb-1", "reported after a restart");
    assert.equal(h.rt.rebinds.length, 1, "no new try after the restart");
    assert.equal(again.asked.length, 0);

    again.hold([vm("r1", "rb-2")]);
    await again.pass();
    assert.equal(h.rt.rebinds.length, 2, "a new reference is rebound");
    assert.equal(again.ref("r1"), "rb-2");
    again.hold([]);
    await again.pass();
    assert.deepEqual(JSON.parse(await Deno.readTextFile(`${dir}/${REBOUND_FILE}`)), {}, "pruned");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("identity rebind: a silent guest gets exactly 3 tries 5 minutes apart, and nothing is reported", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-rebind-conv-" });
  try {
    const h = setup(dir);
    h.hold([vm("s1", "rb-s")]);
    await h.pass();
    await h.pass();
    assert.equal(h.rt.rebinds.length, 1);
    await h.clock.advance(REBIND_RETRY_MS - 1);
    await h.pass();
    assert.equal(h.rt.rebinds.length, 1, "not before 5 minutes");
    const w = h.wakes();
    await h.clock.advance(1);
    assert.equal(h.wakes(), w + 1, "the retry wakes the loop when it is due");
    await h.pass();
    assert.equal(h.rt.rebinds.length, 2);
    await h.clock.advance(REBIND_RETRY_MS);
    await h.pass();
    assert.equal(h.rt.rebinds.length, 3);
    for (let i = 0; i < 4; i++) {
      await h.clock.advance(REBIND_RETRY_MS);
      await h.pass();
    }
    assert.equal(h.rt.rebinds.length, 3, "exactly 3 tries");
    assert.equal(h.ref("s1"), "");
    assert.match(h.rebinder.progress("s1")?.gaveUp ?? "", /did not answer 3 tries/);
    assert.equal(new Set(h.rt.rebinds.map((r) => r.nonce)).size, 3, "a fresh nonce per try");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("identity rebind: a refused or malformed bundle is not retried; an unavailable broker is no try", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-rebind-conv-" });
  try {
    const h = setup(dir);
    h.answers.set("rb-refused", { status: "refused", message: "the restore was deleted" });
    h.answers.set("rb-bad", { status: "ok", secret: new TextEncoder().encode('{"v":2}') });
    h.answers.set("rb-later", { status: "unavailable", message: "no session" });
    h.rt.answering.add("u1");
    h.hold([vm("x1", "rb-refused"), vm("m1", "rb-bad"), vm("u1", "rb-later")]);
    await h.pass();
    await h.pass();
    for (let i = 0; i < 3; i++) {
      await h.clock.advance(REBIND_RETRY_MS);
      await h.pass();
    }
    await t.step("refused: asked once, never tried", () => {
      assert.equal(h.asked.filter((q) => q.ref === "rb-refused").length, 1);
      assert.match(h.rebinder.progress("x1")?.gaveUp ?? "", /refused the bundle: the restore was deleted/);
    });
    await t.step("malformed: asked once, never tried", () => {
      assert.equal(h.asked.filter((q) => q.ref === "rb-bad").length, 1);
      assert.match(h.rebinder.progress("m1")?.gaveUp ?? "", /version is 2/);
    });
    await t.step("unavailable: asked again every 5 minutes, no try counted", () => {
      assert.ok(h.asked.filter((q) => q.ref === "rb-later").length >= 3);
      assert.equal(h.rebinder.progress("u1")?.tries, 0);
    });
    assert.equal(h.rt.rebinds.length, 0, "no disk for any of them");
    h.answers.delete("rb-later");
    await h.clock.advance(REBIND_RETRY_MS);
    await h.pass();
    await h.pass();
    assert.equal(h.ref("u1"), "rb-later", "once the broker answers, the guest is rebound");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
