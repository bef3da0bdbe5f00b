/**
 * Test support: one hold record per shape of hold bcd writes.
 *
 * @module
 */
import type { HoldRecord } from "../../core/converge/devices/hold.ts";

const G = "GPU-6f2b3c1a-91d4-5e0b-8a7c-2d9e4f1b0c31";

/** One record per shape of hold bcd writes. */
export const HOLD_RECORDS: Record<string, HoldRecord> = {
  "a whole-GPU hold": {
    allocationId: "a1",
    binding: "hold",
    devices: [{ class: "gpu", atom: G, gpuUuid: G, cdiName: G, minorNumber: 0 }],
    env: [`NVIDIA_VISIBLE_DEVICES=${G}`, "BCD_ALLOCATION_ID=a1"],
  },
  "a MIG hold with a slice": {
    allocationId: "m-2",
    binding: "hold",
    devices: [{ class: "gpu.mig", atom: `${G}/gi1/ci0`, gpuUuid: G, cdiName: `${G}_gi1_ci0`, minorNumber: 2 }],
    env: ["NVIDIA_VISIBLE_DEVICES=MIG-x", "BCD_ALLOCATION_ID=m-2", "BCD_CGROUP_PARENT=bcd-alloc-m\\x2d2.slice"],
    cgroupParent: "bcd-alloc-m\\x2d2.slice",
  },
  "a Kubernetes slot hold without a known minor": {
    allocationId: "k",
    binding: "kubernetes",
    devices: [
      { class: "gpu.slot", atom: `${G}/s0`, gpuUuid: G, cdiName: `${G}_s0` },
      { class: "gpu.slot", atom: `${G}/s1`, gpuUuid: G, cdiName: `${G}_s1` },
    ],
    env: ["BCD_ALLOCATION_ID=k", "CUDA_MPS_PIPE_DIRECTORY=/run/nvidia-mps"],
  },
};
