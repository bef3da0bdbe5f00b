/**
 * One contract for the `gpu-sharing` unit's port, run against the in-memory fake (`core/host/fakes.ts`), the real
 * backend (`MpsSharing`) driving `fixtures/host/fake-smi-compute` and `fixtures/host/fake-mps-control` (this machine
 * has no GPU and no MPS; every argv and daemon command recorded and asserted) with its pipe directory in a temp root,
 * and the same through a real helper socket, where root also refuses to stop MPS under a bound slot hold.
 */
import assert from "node:assert/strict";
import { ConditionSet } from "../../core/converge/conditions.ts";
import { FakeSharing } from "../../core/host/fakes.ts";
import { gpuSharingUnit, HostConverger, type SharingPort } from "../../core/host/mod.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { HelperSharing } from "../helper/ports_host.ts";
import { startTestHelper } from "../helper/helper_testing.ts";
import { MpsSharing } from "./mps_sharing.ts";

const FIX = new URL("../../fixtures/host/", import.meta.url).pathname;
const ctx = () => ({ generation: 1, conditions: new ConditionSet({ monotonic: () => 0 }), log: silentLogger() });
const section = (units: Record<string, unknown>) => ({
  units: Object.entries(units).map(([name, s]) => ({ name, settings_json: JSON.stringify(s) })),
});
const G = ["GPU-aaaaaaaa-0000-4000-8000-000000000001", "GPU-bbbbbbbb-0000-4000-8000-000000000002"] as const;

interface SharingSubject {
  port: SharingPort;
  slotHolds: string[];
  modes(): Promise<Record<string, string>>;
  /** The set the running daemon serves, `undefined` when none runs. */
  daemon(): Promise<string | undefined>;
  argv?(): Promise<string[]>;
  close(): Promise<void>;
}

async function sharingContract(t: Deno.TestContext, make: () => Promise<SharingSubject>) {
  const s = await make();
  const host = new HostConverger([gpuSharingUnit(s.port, () => Promise.resolve(s.slotHolds))]);
  const mps = (extra: Record<string, unknown> = {}) => section({ "gpu-sharing": { mode: "mps", ...extra } });
  const changes = async (from: number) =>
    ((await s.argv?.()) ?? []).slice(from).filter((l) => !/query-gpu|get_server_list/.test(l));
  try {
    await t.step("MPS over one GPU: its compute mode set, then the daemon started for it", async () => {
      assert.deepEqual(await host.converge(mps({ gpus: [G[0]], activeThreadPercentage: 50 }), ctx()), {
        kind: "converged",
      });
      assert.deepEqual(await s.modes(), { [G[0]]: "Exclusive_Process", [G[1]]: "Default" });
      assert.equal(await s.daemon(), G[0]);
      if (s.argv) {
        assert.deepEqual(await changes(0), [
          `nvidia-smi -i ${G[0]} -c EXCLUSIVE_PROCESS`,
          `mps-control -d CUDA_VISIBLE_DEVICES=${G[0]}`,
          "mps-control set_default_active_thread_percentage 50",
        ]);
      }
    });
    await t.step("an unchanged host: nothing runs", async () => {
      const before = (await s.argv?.())?.length ?? 0;
      assert.deepEqual(await host.converge(mps({ gpus: [G[0]], activeThreadPercentage: 50 }), ctx()), {
        kind: "converged",
      });
      assert.deepEqual(await changes(before), []);
    });
    await t.step("another set while a slot hold is bound: FAILED naming the hold, nothing changes", async () => {
      s.slotHolds.push("alloc-slot-1");
      const out = await host.converge(mps(), ctx());
      assert.equal(out.kind, "failed");
      assert.match(out.kind === "failed" ? out.message : "", /slot hold alloc-slot-1 uses MPS/);
      assert.equal(await s.daemon(), G[0]);
      s.slotHolds.length = 0;
    });
    await t.step("every GPU: the daemon restarted for both, the second GPU's mode set", async () => {
      const before = (await s.argv?.())?.length ?? 0;
      assert.deepEqual(await host.converge(mps(), ctx()), { kind: "converged" });
      assert.equal(await s.daemon(), `${G[0]},${G[1]}`);
      assert.deepEqual(await s.modes(), { [G[0]]: "Exclusive_Process", [G[1]]: "Exclusive_Process" });
      if (s.argv) {
        assert.deepEqual(await changes(before), [
          "mps-control quit ",
          `nvidia-smi -i ${G[1]} -c EXCLUSIVE_PROCESS`,
          `mps-control -d CUDA_VISIBLE_DEVICES=${G[0]},${G[1]}`,
        ]);
      }
    });
    await t.step("a GPU this host lacks fails the unit", async () => {
      const out = await host.converge(mps({ gpus: ["GPU-cccccccc-0000-4000-8000-000000000003"] }), ctx());
      assert.match(out.kind === "failed" ? out.message : "", /is not on this host/);
    });
    await t.step("time-slicing: bcd's daemon stopped and the compute modes given back", async () => {
      assert.deepEqual(await host.converge(section({ "gpu-sharing": { mode: "time-slicing" } }), ctx()), {
        kind: "converged",
      });
      assert.equal(await s.daemon(), undefined);
      assert.deepEqual(await s.modes(), { [G[0]]: "Default", [G[1]]: "Default" });
      assert.deepEqual((await s.port.read()).computeModes, {});
    });
    await t.step("the unit dropped after MPS again: exactly bcd's changes undone", async () => {
      assert.deepEqual(await host.converge(mps({ gpus: [G[1]] }), ctx()), { kind: "converged" });
      assert.deepEqual(await host.converge(section({}), ctx()), { kind: "converged" });
      assert.equal(await s.daemon(), undefined);
      assert.deepEqual(await s.modes(), { [G[0]]: "Default", [G[1]]: "Default" });
    });
  } finally {
    await s.close();
  }
}

Deno.test("gpu-sharing port contract: in-memory fake", async (t) => {
  await sharingContract(t, () => {
    const f = new FakeSharing([...G]);
    return Promise.resolve({
      port: f,
      slotHolds: [],
      modes: () => Promise.resolve(Object.fromEntries(f.modes)),
      daemon: () => Promise.resolve(f.mpsRunning ? f.started?.gpus.join(",") : undefined),
      close: () => Promise.resolve(),
    });
  });
});

async function _fakeHost(): Promise<{ root: string; smi: string; ctl: string; port: () => MpsSharing }> {
  const root = await Deno.makeTempDir({ prefix: "bcd-sharing-" });
  await Deno.mkdir(`${root}/modes`);
  for (const g of G) await Deno.writeTextFile(`${root}/modes/${g}`, "Default");
  const wrap = async (name: string, tool: string) => {
    await Deno.writeTextFile(
      `${root}/${name}`,
      `#!/bin/sh\nexport FAKE_SHARING_STATE='${root}'\nexec '${FIX}${tool}' "$@"\n`,
    );
    await Deno.chmod(`${root}/${name}`, 0o755);
    return `${root}/${name}`;
  };
  const smi = await wrap("nvidia-smi", "fake-smi-compute");
  const ctl = await wrap("nvidia-cuda-mps-control", "fake-mps-control");
  const port = () =>
    new MpsSharing({
      nvidiaSmi: smi,
      mpsControl: ctl,
      etc: `${root}/etc`,
      pipeDirectory: `${root}/run/nvidia-mps`,
      logDirectory: `${root}/log/nvidia-mps`,
    });
  return { root, smi, ctl, port };
}

function _realSubject(root: string, port: SharingPort, close: () => Promise<void>): SharingSubject {
  return {
    port,
    slotHolds: [],
    modes: async () =>
      Object.fromEntries(await Promise.all(G.map(async (g) => [g, await Deno.readTextFile(`${root}/modes/${g}`)]))),
    daemon: () =>
      Deno.readTextFile(`${root}/mps.running`).catch((e) => {
        if (e instanceof Deno.errors.NotFound) return undefined;
        throw e;
      }),
    argv: async () => (await Deno.readTextFile(`${root}/argv.log`)).split("\n").filter(Boolean),
    close,
  };
}

Deno.test("gpu-sharing port contract: MpsSharing driving fake nvidia-smi and nvidia-cuda-mps-control", async (t) => {
  const k = await _fakeHost();
  await sharingContract(t, () => Promise.resolve(_realSubject(k.root, k.port(), () => Promise.resolve())));
  await t.step("the pipe directory exists while bcd's daemon runs, and not after", async () => {
    const exists = () => Deno.stat(`${k.root}/run/nvidia-mps`).then(() => true, () => false);
    assert.equal(await exists(), false);
  });
  await Deno.remove(k.root, { recursive: true });
});

Deno.test("gpu-sharing port contract: through a real helper socket (sharing.read / sharing.apply)", async (t) => {
  const k = await _fakeHost();
  const h = await startTestHelper({ sharing: k.port() });
  await sharingContract(t, () => Promise.resolve(_realSubject(k.root, new HelperSharing(h.client), () => h.close())));
  await Deno.remove(k.root, { recursive: true });
});

Deno.test("the helper refuses to stop MPS while a slot hold file is bound, whatever the node asks", async () => {
  const k = await _fakeHost();
  const h = await startTestHelper({ sharing: k.port() });
  try {
    await h.client.call("sharing.apply", { steps: [{ op: "mps-start", gpus: [G[0]] }] });
    await h.backends.holds.writeSpec({
      allocationId: "alloc-slot",
      binding: "hold",
      devices: [{ class: "gpu.slot", atom: `${G[0]}/s0`, gpuUuid: G[0], cdiName: `${G[0]}_s0`, minorNumber: 0 }],
      env: [`NVIDIA_VISIBLE_DEVICES=${G[0]}`, "BCD_ALLOCATION_ID=alloc-slot"],
    });
    await assert.rejects(
      h.client.call("sharing.apply", { steps: [{ op: "mps-stop" }] }),
      /slot hold alloc-slot uses MPS/,
    );
    await assert.rejects(
      h.client.call("sharing.apply", { steps: [{ op: "mps-start", gpus: ["all; reboot"] }] }),
      /steps\[0\]\.gpus\[0\]/,
    );
    await assert.rejects(
      h.client.call("sharing.apply", { steps: [{ op: "mps-start", gpus: [G[0]], activeThreadPercentage: 0 }] }),
      /activeThreadPercentage/,
    );
    assert.equal(await Deno.readTextFile(`${k.root}/mps.running`), G[0], "the daemon still runs");
  } finally {
    await h.close();
    await Deno.remove(k.root, { recursive: true });
  }
});
