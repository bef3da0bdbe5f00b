import assert from "node:assert/strict";
import { ConvergenceEngine } from "../converge/engine.ts";
import { InstancesConverger } from "../converge/instances/converger.ts";
import { tapName } from "../converge/instances/tap_name.ts";
import { silentLogger } from "../log/mod.ts";
import { PluginHost } from "./host.ts";
import { PluginRuntime } from "./plugin_runtime.ts";
import { writeSamplePlugin } from "./sample_testing.ts";

const ID = "7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f";

/**
 * Generation `g` of a spec with one running instance of the plugin runtime `sample`, with `nics` NICs on br0, guarded
 * (ssh from the host only) or not.
 */
const spec = (g: number, nics: number, guarded = true, id = ID) => ({
  generation: g,
  specHash: `h${g}`,
  sections: {
    instances: {
      instances: [{
        id,
        runtime: "sample",
        state: 1,
        vcpus: 1,
        memory_bytes: 2 ** 30,
        nics: Array.from({ length: nics }, (_, i) => ({ mac: `52:54:00:00:00:0${i + 1}`, bridge: "br0" })),
        ssh_from_host_only: guarded,
        identity_rebind_ref: "rebind-7",
      }],
    },
  },
});

Deno.test("instances on a runtime plugin that forgets a guarded instance's tap: the instance is stopped and fails with the seed's message", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-runtime-conv-" });
  await writeSamplePlugin(dir, { mode: "notaps" });
  const host = new PluginHost({ dir, bcdVersion: "0.0.0-test", log: silentLogger() });
  try {
    const conv = new InstancesConverger([new PluginRuntime(host, "sample")]);
    assert.deepEqual(conv.runtimeNames, ["sample"], "advertised in Hello under the plugin's name");
    const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
    engine.hold(spec(1, 2));
    const sec = (await engine.pass()).sections.find((x) => x.section === "instances")!;
    assert.equal(sec.state, "FAILED", JSON.stringify(sec));
    const want = `runtime did not create taps ${tapName(ID, 1)}: its network rules cannot apply`;
    assert.ok(sec.message.includes(want), sec.message);
    assert.equal(conv.report().find((r) => r.id === ID)?.message.includes(want), true);
    const d = (await new PluginRuntime(host, "sample").list()).find((x) => x.id === ID);
    assert.equal(d?.state, "stopped", "the instance is stopped, not left running unguarded");
    const rec = d?.record as unknown as { sshFromHostOnly: boolean; identityRebindRef: string; guarded: boolean };
    assert.deepEqual([rec.sshFromHostOnly, rec.identityRebindRef, rec.guarded], [true, "rebind-7", true]);
    // An instance no rule of bcd's guards runs on without the tap the plugin did not make.
    engine.hold(spec(2, 2, false, "0e0e0e0e-1111-4222-8333-444455556666"));
    const sec3 = (await engine.pass()).sections.find((x) => x.section === "instances")!;
    assert.equal(sec3.state, "CONVERGED", JSON.stringify(sec3));
  } finally {
    await host.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("instances on a runtime plugin converge, and an unchanged spec's next pass asks the plugin for nothing but list", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-runtime-conv-" });
  await writeSamplePlugin(dir);
  const host = new PluginHost({ dir, bcdVersion: "0.0.0-test", log: silentLogger() });
  const calls: string[] = [];
  const rt = new PluginRuntime(host, "sample");
  const spy = new Proxy(rt, {
    get(target, p, r) {
      const v = Reflect.get(target, p, r);
      if (typeof v !== "function") return v;
      return (...a: unknown[]) => (calls.push(String(p)), (v as (...x: unknown[]) => unknown).apply(target, a));
    },
  });
  try {
    const engine = new ConvergenceEngine({ convergers: [new InstancesConverger([spy])], log: silentLogger() });
    engine.hold(spec(1, 1));
    const first = (await engine.pass()).sections.find((x) => x.section === "instances")!;
    assert.equal(first.state, "CONVERGED", JSON.stringify(first));
    assert.ok(calls.includes("define") && calls.includes("start"), calls.join(","));
    calls.length = 0;
    engine.hold(spec(2, 1));
    const second = (await engine.pass()).sections.find((x) => x.section === "instances")!;
    assert.equal(second.state, "CONVERGED");
    assert.deepEqual([...new Set(calls)], ["list"]);
  } finally {
    await host.close();
    await Deno.remove(dir, { recursive: true });
  }
});
