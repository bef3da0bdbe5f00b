import assert from "node:assert/strict";
import { holdEnv } from "./env.ts";
import { AllocationRefused } from "./reasons.ts";

const G = "GPU-aaaa";
const M = "MIG-bbbb";

Deno.test("NVIDIA_VISIBLE_DEVICES lists a MIG instance's UUID and a GPU once however many slots are held", () => {
  const env = holdEnv({
    allocationId: "alloc1",
    binding: "hold",
    devices: [
      { class: "gpu.slot", visibleId: G },
      { class: "gpu.slot", visibleId: G },
      { class: "gpu.mig", visibleId: M },
    ],
  });
  assert.deepEqual(env, [`NVIDIA_VISIBLE_DEVICES=${G},${M}`, "BCD_ALLOCATION_ID=alloc1"]);
});

Deno.test("a Kubernetes hold gets no NVIDIA_VISIBLE_DEVICES but still BCD_ALLOCATION_ID", () => {
  const env = holdEnv({ allocationId: "k1", binding: "kubernetes", devices: [{ class: "gpu", visibleId: G }] });
  assert.deepEqual(env, ["BCD_ALLOCATION_ID=k1"]);
});

Deno.test("a slot hold gets CUDA_MPS_PIPE_DIRECTORY only when the MPS directory exists", () => {
  const base = {
    allocationId: "s1",
    binding: "hold" as const,
    devices: [{ class: "gpu.slot" as const, visibleId: G }],
  };
  assert.ok(
    holdEnv({ ...base, mpsPipeDirectory: "/run/nvidia-mps" }).includes("CUDA_MPS_PIPE_DIRECTORY=/run/nvidia-mps"),
  );
  assert.ok(!holdEnv(base).some((l) => l.startsWith("CUDA_MPS_PIPE_DIRECTORY=")));
  const whole = { ...base, devices: [{ class: "gpu" as const, visibleId: G }], mpsPipeDirectory: "/run/nvidia-mps" };
  assert.ok(!holdEnv(whole).some((l) => l.startsWith("CUDA_MPS_PIPE_DIRECTORY=")), "only slot holds");
});

Deno.test("a hold with a slice gets BCD_CGROUP_PARENT, then the assignment's extra lines", () => {
  const env = holdEnv({
    allocationId: "a",
    binding: "hold",
    devices: [{ class: "gpu", visibleId: G }],
    cgroupParent: "bcd-alloc-a.slice",
    extra: ["FOO=bar", "EMPTY="],
  });
  assert.deepEqual(env.slice(2), ["BCD_CGROUP_PARENT=bcd-alloc-a.slice", "FOO=bar", "EMPTY="]);
});

Deno.test("extra env lines that are not KEY=VALUE on one line, or that set bcd's own keys, are refused", () => {
  for (const bad of ["NOEQUALS", "A=b\nC=d", "1X=y", "NVIDIA_VISIBLE_DEVICES=all", "BCD_ALLOCATION_ID=other"]) {
    assert.throws(
      () => holdEnv({ allocationId: "a", binding: "hold", devices: [{ class: "gpu", visibleId: G }], extra: [bad] }),
      (e) => e instanceof AllocationRefused && e.reason === "invalid-assignment",
      bad,
    );
  }
});

Deno.test("extra env lines with a loader key, a value env readers differ on, or a key twice are refused", () => {
  const d = [{ class: "gpu" as const, visibleId: G }];
  for (
    const [extra, why] of [
      [["LD_PRELOAD=/tmp/x.so"], /dynamic loader/],
      [["A=$(reboot)"], /U\+0024/],
      [["A=x\u2028B=y"], /U\+2028/],
      [["A=\u001b[2J"], /U\+001B/],
      [["A=1", "A=2"], /sets A twice/],
    ] as const
  ) {
    assert.throws(
      () => holdEnv({ allocationId: "a", binding: "hold", devices: d, extra: [...extra] }),
      (e) => e instanceof AllocationRefused && e.reason === "invalid-assignment" && why.test(e.message),
      extra.join(" "),
    );
  }
});
