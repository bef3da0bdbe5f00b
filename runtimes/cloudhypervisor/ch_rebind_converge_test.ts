/**
 * Identity rebind end to end in process on `cloud-hypervisor` (000 §Identity rebind): the instances converger and its
 * {@link IdentityRebinder} over the `cloud-hypervisor` runtime, its VMMs fake (`fake_vmm.ts`: a guest that answers the
 * rebind disk from its tar's nonce, or a silent one), the retries on a fake clock. The same driver `bcd node` wires for
 * this runtime (`roles/node.ts`).
 */
import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import { ConvergenceEngine } from "../../core/converge/engine.ts";
import { InstancesConverger } from "../../core/converge/instances/converger.ts";
import { IdentityRebinder, REBIND_RETRY_MS } from "../../core/converge/instances/identity_rebind.ts";
import type { SecretQuery } from "../../core/converge/instances/user_data.ts";
import { REBOUND_FILE, ReboundFile } from "../../core/rebind/mod.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";
import { makeQcow2, sha256Hex } from "../../fixtures/libvirt/image_server.ts";
import { type ChTestEnv, chTestEnvOrSkip } from "./ch_testing.ts";

const BUNDLE = JSON.stringify({ v: 1, account: "ubuntu", principals: "exec-r1" });

async function withConverger(
  t: Deno.TestContext,
  f: (h: {
    env: ChTestEnv;
    clock: FakeClock;
    asked: SecretQuery[];
    apply: (instances: Record<string, unknown>[]) => Promise<string>;
    vm: (id: string, ref: string) => Record<string, unknown>;
    ref: (id: string) => string | undefined;
    rebinder: IdentityRebinder;
  }) => Promise<void>,
): Promise<void> {
  const env = await chTestEnvOrSkip(t);
  if (!env) return;
  const clock = new FakeClock();
  const asked: SecretQuery[] = [];
  const secrets = {
    fetch: (q: SecretQuery) => {
      asked.push(q);
      return Promise.resolve({ status: "ok" as const, secret: new TextEncoder().encode(BUNDLE) });
    },
  };
  const rebinder = new IdentityRebinder({
    store: new ReboundFile(env.dataDir),
    secrets,
    runtime: (name) => name === env.rt.name ? env.rt : undefined,
    clock,
    log: silentLogger(),
  });
  const conv = new InstancesConverger([env.rt], { secrets, rebinder });
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
  let gen = 0;
  const apply = async (instances: Record<string, unknown>[]) => {
    engine.hold({ generation: ++gen, specHash: `h${gen}`, sections: { instances: { instances } } });
    const s = (await engine.pass()).sections.find((x) => x.section === "instances")!;
    await rebinder.settled();
    return s.state;
  };
  const base = await makeQcow2(env.dir, "base.qcow2", "16M");
  env.srv.put("/base.qcow2", base);
  const sha = await sha256Hex(base);
  const vm = (id: string, ref: string) => ({
    id,
    allocation_id: `alloc-${id}`,
    runtime: "cloud-hypervisor",
    state: 1,
    vcpus: 1,
    memory_bytes: 64 * 1024 * 1024,
    image: { url: `${env.srv.origin}/base.qcow2`, sha256: sha, format: "qcow2" },
    identity_rebind_ref: ref,
  });
  const ref = (id: string) => conv.report().find((r) => r.id === id)?.identityReboundRef;
  try {
    await f({ env, clock, asked, apply, vm, ref, rebinder });
  } finally {
    await rebinder.stop();
    await env.close();
  }
}

const vmmOf = (env: ChTestEnv, id: string) => env.systemd.units.get(`bcd-ch-${id}.service`)?.vmm;
const rebindAdds = (env: ChTestEnv, id: string) =>
  (vmmOf(env, id)?.hotAdded ?? []).filter((d) => d.id === "vdz" && d.serial === "bc-rebind").length;

Deno.test("cloud-hypervisor identity rebind through the converger: an answering guest is rebound once, recorded and reported as identity_rebound_ref; the disk's file is gone", async (t) => {
  await withConverger(t, async ({ env, asked, apply, vm, ref }) => {
    env.systemd.guest = { answersRebind: true };
    assert.equal(await apply([vm("rb-a", "rb-1")]), "CONVERGED");
    assert.equal(ref("rb-a"), "rb-1");
    assert.deepEqual(asked.map((q) => [q.purpose, q.ref, q.allocationId]), [["identity-rebind", "rb-1", "alloc-rb-a"]]);
    assert.equal(rebindAdds(env, "rb-a"), 1);
    assert.deepEqual(JSON.parse(await Deno.readTextFile(`${env.dataDir}/${REBOUND_FILE}`)), { "rb-a": "rb-1" });
    await assert.rejects(Deno.stat(`${env.rt.instanceDir("rb-a")}/rebind.raw`), Deno.errors.NotFound);
    await apply([vm("rb-a", "rb-1")]);
    assert.equal(rebindAdds(env, "rb-a"), 1, "never again for the same reference");
  });
});

Deno.test("cloud-hypervisor identity rebind through the converger: a silent guest sees exactly 3 hot-adds 5 minutes apart, nothing is reported, and the file is gone after every try", async (t) => {
  await withConverger(t, async ({ env, clock, apply, vm, ref, rebinder }) => {
    const file = () => `${env.rt.instanceDir("rb-s")}/rebind.raw`;
    await apply([vm("rb-s", "rb-s1")]);
    assert.equal(rebindAdds(env, "rb-s"), 1);
    await assert.rejects(Deno.stat(file()), Deno.errors.NotFound);
    await clock.advance(REBIND_RETRY_MS - 1);
    await apply([vm("rb-s", "rb-s1")]);
    assert.equal(rebindAdds(env, "rb-s"), 1, "not before 5 minutes");
    await clock.advance(1);
    await apply([vm("rb-s", "rb-s1")]);
    assert.equal(rebindAdds(env, "rb-s"), 2);
    for (let i = 0; i < 4; i++) {
      await clock.advance(REBIND_RETRY_MS);
      await apply([vm("rb-s", "rb-s1")]);
      await assert.rejects(Deno.stat(file()), Deno.errors.NotFound);
    }
    assert.equal(rebindAdds(env, "rb-s"), 3, "exactly 3 tries");
    assert.equal(ref("rb-s"), "");
    assert.match(rebinder.progress("rb-s")?.gaveUp ?? "", /did not answer 3 tries/);
  });
});
