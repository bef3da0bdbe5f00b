/**
 * The ramdisk's `diag.nvml`, wired as `roles/ramdisk.ts` wires it: the node's handler over `HelperGpuTool` (nvidia-smi
 * run by the agent for the query, each GPU's NUMA node asked of the ramdisk's helper with `pci.numa_node`).
 */
import assert from "node:assert/strict";
import { packPayload, unpackResult } from "../../proto/mod.ts";
import { commandBody } from "../../core/commands/command.ts";
import { CommandFailed } from "../../core/commands/rejection.ts";
import { diagNvmlHandler } from "../../core/converge/devices/mod.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { startTestHelper } from "./helper_testing.ts";
import { HelperGpuTool } from "./ports.ts";

function ctx() {
  const p = packPayload("diag.nvml", { gpu_uuids: [] });
  return {
    command: commandBody({ id: "d", nodeId: "n", kind: "diag.nvml", payload: { typeUrl: p.type_url, value: p.value } }),
    signal: new AbortController().signal,
    bootId: "b",
    logger: silentLogger(),
  };
}

Deno.test("the ramdisk's diag.nvml diagnoses every GPU nvidia-smi reports, NUMA nodes from its helper", async () => {
  const h = await startTestHelper({ role: "ramdisk" });
  try {
    const r = await diagNvmlHandler({ gpu: new HelperGpuTool(h.client, { binary: h.smi }) }).run(ctx());
    const res = unpackResult("diag.nvml", { type_url: r.result!.typeUrl, value: r.result!.value });
    assert.equal(res.gpus?.length, 8, "the captured HGX's eight GPUs");
    assert.ok(res.gpus!.every((g) => /^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.\d$/i.test(g.pci_bus_id ?? "")));
    assert.deepEqual(await h.smiLog(), ["-q -x", "-L"], "queried, never reset");
  } finally {
    await h.close();
  }
});

Deno.test("the ramdisk's diag.nvml without an NVIDIA driver fails no-gpu-driver, naming the missing tool", async () => {
  const h = await startTestHelper({ role: "ramdisk" });
  try {
    const gpu = new HelperGpuTool(h.client, { binary: `${h.root}/no-such/nvidia-smi` });
    await assert.rejects(
      diagNvmlHandler({ gpu }).run(ctx()),
      (e) => e instanceof CommandFailed && e.code === "no-gpu-driver" && /nvidia-smi is not installed/.test(e.message),
    );
  } finally {
    await h.close();
  }
});
