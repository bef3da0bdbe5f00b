/**
 * The `gpu.reset` and `diag.nvml` kind handlers: {@link gpuReset} and {@link diagNvml} behind the command
 * machinery's `KindHandler`, with the payload and result as `bcd.v1.GpuResetPayload`/`GpuResetResult` and
 * `DiagNvmlPayload`/`DiagNvmlResult`. `gpu.reset` locks `gpu:<uuid>` for each GPU it names, so no other lane acts on
 * them at once. `invalid-payload` and `gpu-busy` fail the whole command.
 *
 * @module
 */
import { packResult, unpackPayload, WireDecodeError } from "../../../proto/mod.ts";
import type { CommandBody } from "../../commands/command.ts";
import type { HandlerContext, HandlerResult, KindHandler } from "../../commands/handlers.ts";
import { CommandFailed, InvalidPayload } from "../../commands/rejection.ts";
import { checkDiagDcgmPayload, DcgmKindError, diagDcgm, type DiagDcgmPorts } from "./diag_dcgm.ts";
import { diagNvml, type XidSource } from "./diag_nvml.ts";
import { checkGpuResetPayload, GpuKindError, gpuReset, type GpuResetPorts } from "./gpu_reset.ts";
import type { GpuTool } from "./ports.ts";

function _unpack<K extends "gpu.reset" | "diag.nvml">(kind: K, p: CommandBody["payload"]) {
  if (p === undefined) return { gpu_uuids: [] as string[] };
  try {
    const m = unpackPayload(kind, { type_url: p.typeUrl, value: p.value });
    return { gpu_uuids: [...(m.gpu_uuids ?? [])] };
  } catch (e) {
    if (e instanceof WireDecodeError) throw new InvalidPayload(e.message, { cause: e });
    throw e;
  }
}

function _rethrow(e: unknown): never {
  if (e instanceof DcgmKindError) throw new CommandFailed(e.reason, e.message, { cause: e });
  if (e instanceof GpuKindError) {
    if (e.reason === "invalid-payload") throw new InvalidPayload(e.message, { cause: e });
    throw new CommandFailed(e.reason, e.message, { cause: e });
  }
  throw e;
}

/** The `gpu.reset` handler. */
export function gpuResetHandler(ports: GpuResetPorts): KindHandler {
  return {
    kind: "gpu.reset",
    resources(command) {
      try {
        return checkGpuResetPayload(_unpack("gpu.reset", command.payload)).gpu_uuids.map((u) => `gpu:${u}`);
      } catch (e) {
        return _rethrow(e);
      }
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      try {
        const r = await gpuReset(_unpack("gpu.reset", ctx.command.payload), ports);
        const any = packResult("gpu.reset", { gpus: r.gpus.map((g) => ({ ...g })) });
        return { result: { typeUrl: any.type_url, value: any.value } };
      } catch (e) {
        return _rethrow(e);
      }
    },
  };
}

/** The `diag.nvml` handler. */
export function diagNvmlHandler(ports: { gpu: GpuTool; xids?: XidSource }): KindHandler {
  return {
    kind: "diag.nvml",
    resources(command) {
      _unpack("diag.nvml", command.payload);
      return [];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      try {
        const r = await diagNvml(_unpack("diag.nvml", ctx.command.payload), ports.gpu, ports.xids);
        const any = packResult("diag.nvml", {
          gpus: r.gpus.map((g) => ({ ...g, problems: [...g.problems], xids: [...g.xids] })),
        });
        return { result: { typeUrl: any.type_url, value: any.value } };
      } catch (e) {
        return _rethrow(e);
      }
    },
  };
}

function _unpackDcgm(p: CommandBody["payload"]) {
  if (p === undefined) return { gpu_uuids: [] as string[], level: 0 };
  try {
    const m = unpackPayload("diag.dcgm", { type_url: p.typeUrl, value: p.value });
    return { gpu_uuids: [...(m.gpu_uuids ?? [])], level: m.level ?? 0 };
  } catch (e) {
    if (e instanceof WireDecodeError) throw new InvalidPayload(e.message, { cause: e });
    throw e;
  }
}

/**
 * The `diag.dcgm` handler (node and ramdisk). From level 2 it locks `gpu:<uuid>` for each GPU it names, so no
 * `gpu.reset` runs on them at once.
 */
export function diagDcgmHandler(ports: DiagDcgmPorts): KindHandler {
  return {
    kind: "diag.dcgm",
    resources(command) {
      try {
        const p = checkDiagDcgmPayload(_unpackDcgm(command.payload));
        return p.level >= 2 ? p.gpu_uuids.map((u) => `gpu:${u}`) : [];
      } catch (e) {
        return _rethrow(e);
      }
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      try {
        const r = await diagDcgm(_unpackDcgm(ctx.command.payload), ports);
        const any = packResult("diag.dcgm", {
          passed: r.passed,
          tests: r.tests.map((t) => ({ ...t })),
          raw_json: r.raw_json,
        });
        return { result: { typeUrl: any.type_url, value: any.value } };
      } catch (e) {
        return _rethrow(e);
      }
    },
  };
}
