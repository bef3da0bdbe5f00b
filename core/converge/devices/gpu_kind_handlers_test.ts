import assert from "node:assert/strict";
import { packPayload, unpackResult } from "../../../proto/mod.ts";
import { commandBody } from "../../commands/command.ts";
import { CommandFailed, InvalidPayload } from "../../commands/rejection.ts";
import { silentLogger } from "../../log/mod.ts";
import { StaticGpuTool } from "./fakes.ts";
import { diagNvmlHandler, gpuResetHandler } from "./gpu_kind_handlers.ts";
import type { ObservedHold } from "./hold.ts";
import { sampleInventory, sampleUuid } from "./inventory_testing.ts";

const [G0, G1] = [sampleUuid(0), sampleUuid(1)];

function ctx(kind: "gpu.reset" | "diag.nvml", gpu_uuids: string[]) {
  const p = packPayload(kind, { gpu_uuids });
  return {
    command: commandBody({ id: "c", nodeId: "n", kind, payload: { typeUrl: p.type_url, value: p.value } }),
    signal: new AbortController().signal,
    bootId: "b",
    logger: silentLogger(),
  };
}

function resetHandler(holds: ObservedHold[] = []) {
  const tool = new StaticGpuTool(sampleInventory());
  const cleared: string[] = [];
  const h = gpuResetHandler({
    gpu: tool,
    holds: () => Promise.resolve({ holds, unreadable: [] }),
    passthrough: () => [],
    conditions: { clearXid: (u) => void cleared.push(u) },
  });
  return { h, tool, cleared };
}

Deno.test("gpu.reset handler: locks gpu:<uuid> per GPU, resets, answers GpuResetResult", async () => {
  const { h, tool, cleared } = resetHandler();
  assert.deepEqual(h.resources!(ctx("gpu.reset", [G0, G1]).command), [`gpu:${G0}`, `gpu:${G1}`]);
  const r = await h.run(ctx("gpu.reset", [G0, "GPU-x"]));
  const res = unpackResult("gpu.reset", { type_url: r.result!.typeUrl, value: r.result!.value });
  assert.deepEqual(res.gpus?.map((g) => [g.gpu_uuid, !!g.reset, !!g.healthy, g.message ?? ""]), [
    [G0, true, true, ""],
    ["GPU-x", false, false, "unknown GPU"],
  ]);
  assert.deepEqual(tool.resets, [G0]);
  assert.deepEqual(cleared, [G0]);
});

Deno.test("gpu.reset handler: an empty list is invalid-payload before it is queued; a held GPU fails gpu-busy", async () => {
  const { h } = resetHandler([{
    allocationId: "a",
    binding: "hold",
    devices: [{ class: "gpu", atom: G0, gpuUuid: G0 }],
    env: [],
  }]);
  assert.throws(() => h.resources!(ctx("gpu.reset", []).command), InvalidPayload);
  await assert.rejects(h.run(ctx("gpu.reset", [G0])), (e) => e instanceof CommandFailed && e.code === "gpu-busy");
});

Deno.test("diag.nvml handler answers DiagNvmlResult", async () => {
  const h = diagNvmlHandler({ gpu: new StaticGpuTool(sampleInventory()), xids: (u) => u === G1 ? [48] : [] });
  assert.deepEqual(h.resources!(ctx("diag.nvml", []).command), []);
  const r = await h.run(ctx("diag.nvml", []));
  const res = unpackResult("diag.nvml", { type_url: r.result!.typeUrl, value: r.result!.value });
  assert.equal(res.gpus?.length, 4);
  assert.deepEqual(res.gpus?.map((g) => !!g.healthy), [true, false, true, true]);
  assert.deepEqual(res.gpus?.[1]?.problems, ["XID 48"]);
});
