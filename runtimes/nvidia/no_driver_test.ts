/** A host without `nvidia-smi` is a CPU-only host: the tool says so by name (issue 27, item 10). */
import assert from "node:assert/strict";
import { NO_GPU_DRIVER, NoGpuDriver } from "../../core/converge/devices/ports.ts";
import { NvidiaSmi } from "./nvidia_smi.ts";

Deno.test("nvidia-smi that is not installed is NoGpuDriver (no-gpu-driver) for queries and resets, not a spawn error", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-no-smi-" });
  try {
    const smi = new NvidiaSmi({ binary: `${dir}/nvidia-smi` });
    for (const call of [() => smi.query(), () => smi.reset("GPU-6f2a1c3e-3b1e-4f0a-9f3c-0d1e2f3a4b5c")]) {
      await assert.rejects(call(), (e) => {
        assert.ok(e instanceof NoGpuDriver, String(e));
        assert.equal(e.reason, NO_GPU_DRIVER);
        assert.match(e.message, /no NVIDIA driver on this host: .*nvidia-smi is not installed/);
        return true;
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an nvidia-smi that runs and fails is still the tool's failure, not a missing driver", async () => {
  const smi = new NvidiaSmi({ run: () => Promise.resolve({ code: 9, stdout: "", stderr: "NVIDIA-SMI has failed" }) });
  await assert.rejects(smi.query(), (e) => !(e instanceof NoGpuDriver) && /NVIDIA-SMI has failed/.test(String(e)));
});
