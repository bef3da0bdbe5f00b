import assert from "node:assert/strict";
import { GpuSharingRefused, parseGpuSharingSettings, planGpuSharing, type SharingObserved } from "./gpu_sharing.ts";
import { HostSettingsError } from "./units.ts";

const A = "GPU-aaaaaaaa-0000-4000-8000-000000000001", B = "GPU-bbbbbbbb-0000-4000-8000-000000000002";
const obs = (o: Partial<SharingObserved> = {}): SharingObserved => ({
  gpus: [{ uuid: A, computeMode: "Default" }, { uuid: B, computeMode: "Default" }],
  mpsRunning: false,
  computeModes: {},
  ...o,
});

const rows: {
  name: string;
  want?: Record<string, unknown>;
  observed: SharingObserved;
  slots?: string[];
  steps?: unknown[];
  refused?: RegExp;
}[] = [
  {
    name: "MPS on an untouched host: modes, then the start",
    want: { mode: "mps" },
    observed: obs(),
    steps: [{ op: "compute-mode", gpu: A }, { op: "compute-mode", gpu: B }, { op: "mps-start", gpus: [A, B] }],
  },
  {
    name: "MPS unchanged: no steps",
    want: { mode: "mps", gpus: [A] },
    observed: obs({
      gpus: [{ uuid: A, computeMode: "Exclusive_Process" }, { uuid: B, computeMode: "Default" }],
      mpsRunning: true,
      mpsStarted: { gpus: [A] },
      computeModes: { [A]: "Default" },
    }),
    steps: [],
  },
  {
    name: "the daemon died: only the start",
    want: { mode: "mps", gpus: [A] },
    observed: obs({ gpus: [{ uuid: A, computeMode: "Exclusive_Process" }, { uuid: B, computeMode: "Default" }] }),
    steps: [{ op: "mps-start", gpus: [A] }],
  },
  {
    name: "a mode changed by hand: put back, the daemon left alone",
    want: { mode: "mps", gpus: [A] },
    observed: obs({ mpsRunning: true, mpsStarted: { gpus: [A] }, computeModes: { [A]: "Default" } }),
    steps: [{ op: "compute-mode", gpu: A }],
  },
  {
    name: "the unit removed: bcd's daemon stopped, its modes given back",
    observed: obs({ mpsRunning: true, mpsStarted: { gpus: [A] }, computeModes: { [A]: "Default" } }),
    steps: [{ op: "mps-stop" }, { op: "restore-compute-mode", gpu: A }],
  },
  {
    name: "the unit removed with a daemon bcd did not start: nothing",
    observed: obs({ mpsRunning: true }),
    steps: [],
  },
  {
    name: "time-slicing with a daemon bcd did not start: refused",
    want: { mode: "time-slicing" },
    observed: obs({ mpsRunning: true }),
    refused: /bcd did not start runs/,
  },
  {
    name: "a stop under a bound slot hold: refused naming it",
    want: { mode: "time-slicing" },
    observed: obs({ mpsRunning: true, mpsStarted: { gpus: [A] } }),
    slots: ["alloc-s"],
    refused: /slot hold alloc-s uses MPS/,
  },
];

Deno.test("planGpuSharing(): the minimal steps, row by row", async (t) => {
  for (const r of rows) {
    await t.step(r.name, () => {
      const desired = r.want === undefined ? undefined : parseGpuSharingSettings(r.want);
      if (r.refused) {
        assert.throws(
          () => planGpuSharing(desired, r.observed, r.slots ?? []),
          (e) => e instanceof GpuSharingRefused && r.refused!.test(e.message),
        );
      } else assert.deepEqual(planGpuSharing(desired, r.observed, r.slots ?? []), r.steps);
    });
  }
});

Deno.test("gpu-sharing settings: refused with the key named", () => {
  for (
    const [raw, msg] of [
      [{ mode: "shared" }, /settings\.mode "shared" is not mps or time-slicing/],
      [{ mode: "time-slicing", gpus: [A] }, /unknown key settings\.gpus/],
      [{ mode: "mps", activeThreadPercentage: 0 }, /activeThreadPercentage 0 is not an integer from 1 to 100/],
      [{ mode: "mps", gpus: ["all"] }, /settings\.gpus\[0\] "all" is not a GPU UUID/],
    ] as [Record<string, unknown>, RegExp][]
  ) {
    assert.throws(() => parseGpuSharingSettings(raw), (e) => e instanceof HostSettingsError && msg.test(e.message));
  }
});
