/**
 * One contract for the `mig-layout` unit's port, run against the in-memory fake (`core/host/fakes.ts`), the real
 * backend (`SmiMig`) driving `fixtures/nvidia/fake_smi_mig.ts` as its `nvidia-smi` (MIG state kept in a file,
 * rendered back through `-q -x` and `-L`; every argv recorded and asserted), and the same through a real helper
 * socket, where root also refuses to remove an instance a hold file names. No GPU here: no variant runs the real tool.
 */
import assert from "node:assert/strict";
import { ConditionSet } from "../../core/converge/conditions.ts";
import { FakeMig } from "../../core/host/fakes.ts";
import { HostConverger, migLayoutUnit, type MigPort } from "../../core/host/mod.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { hgxInventory } from "../nvidia/hgx.ts";
import { HelperMig } from "../helper/ports_host.ts";
import { startTestHelper } from "../helper/helper_testing.ts";
import { SmiMig } from "./smi_mig.ts";
import { writeFakeMigSmi, writeFakeMigState } from "../../fixtures/nvidia/fake_smi_mig.ts";

const ctx = () => ({ generation: 1, conditions: new ConditionSet({ monotonic: () => 0 }), log: silentLogger() });
const section = (units: Record<string, unknown>) => ({
  units: Object.entries(units).map(([name, s]) => ({ name, settings_json: JSON.stringify(s) })),
});

// The HGX board: GPU 2 has MIG on with two 3g.40gb instances (gi 1, 2) that bcd did not make; GPU 0 has MIG off.
const INV = hgxInventory({ 2: "2x3g.40gb" });
const G2 = INV.gpus[2]!.uuid, G0 = INV.gpus[0]!.uuid;
const layout = (instances: string[]) => section({ "mig-layout": { gpus: [{ gpu: G2, instances }] } });

interface MigSubject {
  port: MigPort;
  /** Binds a hold on an atom (or a GPU whole) for the converger's hold check. */
  holds: Map<string, string>;
  /** The GPU instances of G2 as `gi:profile`, sorted by gi. */
  layoutOf(): Promise<string[]>;
  argv?(): Promise<string[]>;
  close(): Promise<void>;
}

async function migContract(t: Deno.TestContext, make: () => Promise<MigSubject>) {
  const s = await make();
  const host = new HostConverger([migLayoutUnit(s.port, () => Promise.resolve(s.holds))]);
  const changes = async (from: number) => ((await s.argv?.()) ?? []).slice(from).filter((l) => l.startsWith("mig "));
  try {
    await t.step("a layout that keeps one 3g.40gb and adds two 1g.10gb: only what is missing is made", async () => {
      // gi 2 (3g.40gb) goes: the list wants one 3g.40gb, and the lower id is kept.
      assert.deepEqual(await host.converge(layout(["3g.40gb", "1g.10gb", "1g.10gb"]), ctx()), { kind: "converged" });
      assert.deepEqual(await s.layoutOf(), ["1:3g.40gb", "2:1g.10gb", "3:1g.10gb"]);
      if (s.argv) {
        assert.deepEqual(await changes(0), [
          `mig -i ${G2} -gi 2 -ci 0 -dci`,
          `mig -i ${G2} -gi 2 -dgi`,
          `mig -i ${G2} -cgi 1g.10gb -C`,
          `mig -i ${G2} -cgi 1g.10gb -C`,
        ]);
      }
      assert.deepEqual(
        (await s.port.read()).managed.filter((m) => m.gpu === G2).map((m) => m.gi).sort(),
        [2, 3],
        "bcd records the two it made",
      );
    });
    await t.step("an unchanged layout: no nvidia-smi mig runs", async () => {
      const before = (await s.argv?.())?.length ?? 0;
      assert.deepEqual(await host.converge(layout(["1g.10gb", "3g.40gb", "1g.10gb"]), ctx()), { kind: "converged" });
      assert.deepEqual(await changes(before), []);
    });
    await t.step(
      "a change that would remove an instance a hold uses: FAILED naming the hold, nothing changes",
      async () => {
        s.holds.set(`${G2}/gi3/ci0`, "alloc-mig-7");
        const before = (await s.argv?.())?.length ?? 0;
        const out = await host.converge(layout(["3g.40gb", "1g.10gb"]), ctx());
        assert.equal(out.kind, "failed");
        assert.equal(out.kind === "failed" ? out.reason : "", "UnitFailed:mig-layout");
        assert.match(
          out.kind === "failed" ? out.message : "",
          /gi3 \(1g\.10gb\) would be removed, but hold alloc-mig-7/,
        );
        assert.deepEqual(await changes(before), []);
        assert.deepEqual(await s.layoutOf(), ["1:3g.40gb", "2:1g.10gb", "3:1g.10gb"]);
        s.holds.clear();
      },
    );
    await t.step("a GPU with MIG mode off fails the unit, saying bcd does not switch it", async () => {
      const out = await host.converge(
        section({ "mig-layout": { gpus: [{ gpu: G0, instances: ["1g.10gb"] }] } }),
        ctx(),
      );
      assert.match(out.kind === "failed" ? out.message : "", /MIG mode is off on GPU/);
    });
    await t.step("a layout the GPU cannot hold fails with nvidia-smi's words", async () => {
      const out = await host.converge(layout(["3g.40gb", "4g.40gb", "1g.10gb"]), ctx());
      assert.equal(out.kind, "failed");
      assert.match(out.kind === "failed" ? out.message : "", /Insufficient Resources/);
    });
    await t.step("the unit removed: exactly the instances bcd made are removed", async () => {
      assert.deepEqual(await host.converge(section({}), ctx()), { kind: "converged" });
      assert.deepEqual(await s.layoutOf(), ["1:3g.40gb"], "the instance bcd found stays");
      assert.deepEqual((await s.port.read()).managed, []);
    });
  } finally {
    await s.close();
  }
}

Deno.test("mig-layout port contract: in-memory fake", async (t) => {
  await migContract(t, () => {
    const f = new FakeMig({ [G2]: true, [G0]: false });
    f.gpus.get(G2)!.instances.push({ gi: 1, profile: "3g.40gb", cis: [0] }, { gi: 2, profile: "3g.40gb", cis: [0] });
    return Promise.resolve({
      port: f,
      holds: new Map(),
      layoutOf: () => Promise.resolve(f.gpus.get(G2)!.instances.map((i) => `${i.gi}:${i.profile}`).sort()),
      close: () => Promise.resolve(),
    });
  });
});

async function _fakeSmi(): Promise<{ root: string; smi: string; state: string; log: string }> {
  const root = await Deno.makeTempDir({ prefix: "bcd-mig-" });
  const state = `${root}/state.json`, log = `${root}/smi.log`, smi = `${root}/nvidia-smi`;
  await writeFakeMigState(state, INV);
  await writeFakeMigSmi(smi, state, log);
  return { root, smi, state, log };
}

function _smiSubject(k: Awaited<ReturnType<typeof _fakeSmi>>, port: MigPort, close: () => Promise<void>): MigSubject {
  return {
    port,
    holds: new Map(),
    layoutOf: async () =>
      (await port.read()).gpus.find((g) => g.uuid === G2)!.instances.map((i) => `${i.gi}:${i.profile}`).sort(),
    argv: async () => (await Deno.readTextFile(k.log).catch(() => "")).split("\n").filter(Boolean),
    close,
  };
}

Deno.test("mig-layout port contract: SmiMig driving a fake nvidia-smi with MIG state", async (t) => {
  const k = await _fakeSmi();
  const port = new SmiMig({ nvidiaSmi: k.smi, etc: `${k.root}/etc` });
  await migContract(t, () => Promise.resolve(_smiSubject(k, port, () => Promise.resolve())));
  await Deno.remove(k.root, { recursive: true });
});

Deno.test("mig-layout port contract: through a real helper socket (mig.read / mig.apply)", async (t) => {
  const k = await _fakeSmi();
  const h = await startTestHelper({ mig: new SmiMig({ nvidiaSmi: k.smi, etc: `${k.root}/etc` }) });
  await migContract(t, () => Promise.resolve(_smiSubject(k, new HelperMig(h.client), () => h.close())));
  await Deno.remove(k.root, { recursive: true });
});

Deno.test("the helper refuses to remove a MIG instance a hold file names, whatever the node asks", async () => {
  const k = await _fakeSmi();
  const h = await startTestHelper({ mig: new SmiMig({ nvidiaSmi: k.smi, etc: `${k.root}/etc` }) });
  try {
    const mig = INV.gpus[2]!.migInstances[1]!;
    await h.backends.holds.writeSpec({
      allocationId: "alloc-held",
      binding: "hold",
      devices: [{ class: "gpu.mig", atom: `${G2}/gi2/ci0`, gpuUuid: G2, cdiName: `${G2}_gi2_ci0`, minorNumber: 2 }],
      env: [`NVIDIA_VISIBLE_DEVICES=${mig.uuid}`, "BCD_ALLOCATION_ID=alloc-held"],
    });
    await assert.rejects(
      h.client.call("mig.apply", { steps: [{ op: "destroy", gpu: G2, gi: 2, cis: [0] }] }),
      /instance gi2 is used by hold alloc-held/,
    );
    await assert.rejects(
      h.client.call("mig.apply", { steps: [{ op: "create", gpu: "GPU-x; reboot", profile: "1g.10gb" }] } as never),
      /steps\[0\]\.gpu/,
    );
    await assert.rejects(
      h.client.call("mig.apply", { steps: [{ op: "create", gpu: G2, profile: "--help" }] }),
      /steps\[0\]\.profile/,
    );
    assert.deepEqual(
      (await Deno.readTextFile(k.log).catch(() => "")).split("\n").filter((l) => l.startsWith("mig ")),
      [],
      "nvidia-smi mig never ran",
    );
  } finally {
    await h.close();
    await Deno.remove(k.root, { recursive: true });
  }
});
