/**
 * The `diag.dcgm` kind (000 §Kinds by lane: provision lane, node and ramdisk, retry-safe, attested): `dcgmi diag -r
 * LEVEL -j` (levels 1 to 4) on the GPUs asked for (every GPU for an empty list), parsed into one result per test and
 * GPU. From level 2 the seed's live-hold rule of `gpu.reset` applies (000 §gpu.reset and live holds): a GPU a live CDI
 * hold names, or a VM has passed through, fails the whole command `gpu-busy` naming the hold or the instance; an
 * empty list is busy while any GPU is. Level 1 (deployment checks only) runs beside a workload.
 *
 * dcgmi runs as root through the helper (`dcgm.diag`), which maps the GPU UUIDs to DCGM's GPU ids (the NVML indices
 * `nvidia-smi --query-gpu=index,uuid` lists) and hands back dcgmi's exit status, its JSON (at most
 * {@link MAX_DCGM_JSON} bytes) and the id ↔ UUID map, so the results name GPUs by UUID.
 *
 * The JSON is read in both shapes DCGM has shipped: 3.x (`"DCGM GPU Diagnostic"` › `test_categories` › `tests` ›
 * `results` with `gpu_ids`, a number or a CSV string) and 4.x (`"DCGM Diagnostic"`, results by `entity_group`/`entity_id`).
 * A status is `pass`, `fail`, `warn` or `skip` (DCGM's not-run reads `skip`); any other fails closed (`fail`, naming
 * it). The run passed when no result failed. A document with no test results, a `runtime_error`, or output that is
 * not a document fails the command `dcgm-failed` with dcgmi's words: an attested "passed" is never inferred from
 * nothing. A host without dcgmi fails `no-dcgm`.
 *
 * @module
 */
import type { PassthroughGpu } from "./conflicts.ts";
import type { ObservedHold, UnreadableHold } from "./hold.ts";
import { gpuHolder, GpuKindError } from "./gpu_reset.ts";
import { classOfAtom } from "./classes.ts";

/** The largest dcgmi document kept (`DiagDcgmResult.raw_json`: at most 1 MiB, for forensics). */
export const MAX_DCGM_JSON = 1024 * 1024;

/** The most test results one run reports (8 GPUs × a level-4 suite is a few hundred). */
export const MAX_DCGM_RESULTS = 4096;

/** What one `dcgmi diag` run gave, as the helper hands it back. */
export interface DcgmRun {
  /** dcgmi's exit status (non-zero when a test failed, with the document still on stdout). */
  readonly exitCode: number;
  /** dcgmi's stdout, at most {@link MAX_DCGM_JSON} bytes. */
  readonly stdout: string;
  /** dcgmi's stderr, cut to a line's worth. */
  readonly stderr: string;
  /** DCGM's GPU ids and their UUIDs. */
  readonly gpus: readonly { readonly id: number; readonly uuid: string }[];
}

/** Runs `dcgmi diag` (root, through the helper). */
export interface DcgmTool {
  /** `null`: dcgmi is not installed on this host. */
  diag(level: DcgmLevel, gpuUuids: readonly string[]): Promise<DcgmRun | null>;
}

/** `dcgmi diag -r` levels. */
export type DcgmLevel = 1 | 2 | 3 | 4;

/** The `diag.dcgm` payload (`bcd.v1.DiagDcgmPayload`). */
export interface DiagDcgmPayload {
  readonly gpu_uuids: readonly string[];
  readonly level: DcgmLevel;
}

/** One test on one GPU (`bcd.v1.DcgmTestResult`). */
export interface DcgmTestResult {
  readonly name: string;
  readonly gpu_uuid: string;
  readonly result: "pass" | "fail" | "warn" | "skip";
  readonly message: string;
}

/** The `diag.dcgm` result (`bcd.v1.DiagDcgmResult`). */
export interface DiagDcgmResult {
  readonly passed: boolean;
  readonly tests: readonly DcgmTestResult[];
  readonly raw_json: string;
}

/** What `diag.dcgm` reads and acts through. */
export interface DiagDcgmPorts {
  readonly dcgm: DcgmTool;
  /** The live holds, read back now (none on a ramdisk). */
  readonly holds: () => Promise<{ holds: readonly ObservedHold[]; unreadable: readonly UnreadableHold[] }>;
  /** GPUs passed through to VMs now. */
  readonly passthrough: () => readonly PassthroughGpu[];
}

/** `diag.dcgm`'s own failures of the whole command. */
export class DcgmKindError extends Error {
  override name = "DcgmKindError";
  constructor(readonly reason: "no-dcgm" | "dcgm-failed", message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

const _MAX_GPUS = 64;

/** Validates a decoded payload; throws `invalid-payload`. */
export function checkDiagDcgmPayload(p: unknown): DiagDcgmPayload {
  const o = (p ?? {}) as { gpu_uuids?: unknown; level?: unknown };
  const level = o.level;
  if (level !== 1 && level !== 2 && level !== 3 && level !== 4) {
    throw new GpuKindError("invalid-payload", `diag.dcgm level must be 1 to 4, not ${JSON.stringify(level ?? 0)}`);
  }
  const list = o.gpu_uuids ?? [];
  if (!Array.isArray(list)) throw new GpuKindError("invalid-payload", "gpu_uuids is not a list");
  if (list.length > _MAX_GPUS) throw new GpuKindError("invalid-payload", `gpu_uuids lists more than ${_MAX_GPUS} GPUs`);
  for (const u of list) {
    if (typeof u !== "string" || classOfAtom(u) !== "gpu") {
      throw new GpuKindError("invalid-payload", `gpu_uuids entry ${JSON.stringify(u)} is not a GPU UUID`);
    }
  }
  return { gpu_uuids: [...new Set(list as string[])], level };
}

/** Who keeps `uuids` (every held or passed-through GPU when empty) busy now, as a sentence, or `undefined`. */
export function dcgmBusy(
  uuids: readonly string[],
  holds: readonly ObservedHold[],
  unreadable: readonly UnreadableHold[],
  passthrough: readonly PassthroughGpu[],
): string | undefined {
  const targets = uuids.length > 0 ? uuids : [
    ...holds.flatMap((h) => h.devices.map((d) => d.gpuUuid)),
    ...passthrough.map((p) => p.gpuUuid),
  ];
  for (const u of targets) {
    const who = gpuHolder(u, holds, unreadable, passthrough);
    if (who) return who;
  }
  const u = unreadable[0];
  return u ? `hold ${u.allocationId} cannot be read (${u.problem}); it may hold a GPU` : undefined;
}

type _Status = DcgmTestResult["result"];

function _status(raw: unknown): { result: _Status; note?: string } {
  const s = typeof raw === "string" ? raw.trim().toLowerCase().replace(/[\s_-]+/g, " ") : "";
  if (s === "pass" || s === "passed") return { result: "pass" };
  if (s === "fail" || s === "failed") return { result: "fail" };
  if (s === "warn" || s === "warning") return { result: "warn" };
  if (s === "skip" || s === "skipped" || s === "not run" || s === "notrun") return { result: "skip" };
  return { result: "fail", note: `unknown status ${JSON.stringify(raw)}` };
}

function _texts(v: unknown): string[] {
  if (!Array.isArray(v)) return typeof v === "string" ? [v] : [];
  return v.flatMap((w) =>
    typeof w === "string"
      ? [w]
      : w !== null && typeof w === "object" && typeof (w as { warning?: unknown }).warning === "string"
      ? [(w as { warning: string }).warning]
      : []
  );
}

function _gpuIds(r: Record<string, unknown>): number[] {
  const g = r.gpu_ids ?? r.gpu_id;
  if (typeof g === "number") return [g];
  if (typeof g === "string") return g.split(",").map((x) => x.trim()).filter((x) => /^\d{1,3}$/.test(x)).map(Number);
  if (typeof r.entity_id === "number" && (r.entity_group === undefined || r.entity_group === "GPU")) {
    return [r.entity_id];
  }
  return [];
}

function _object(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? v as Record<string, unknown> : undefined;
}

/** Parses one dcgmi document (stdout; anything before its first `{` is dcgmi's chatter). */
export function parseDcgmDiag(run: DcgmRun): DiagDcgmResult {
  if (run.stdout.length > MAX_DCGM_JSON) {
    throw new DcgmKindError("dcgm-failed", `dcgmi wrote more than ${MAX_DCGM_JSON} bytes`);
  }
  const start = run.stdout.indexOf("{");
  const words = (run.stderr.trim() || run.stdout.trim()).slice(0, 512);
  if (start < 0) {
    throw new DcgmKindError("dcgm-failed", `dcgmi diag exited ${run.exitCode} without a document: ${words}`);
  }
  const raw = run.stdout.slice(start).trim();
  let doc: unknown;
  try {
    doc = JSON.parse(raw);
  } catch (e) {
    if (!(e instanceof SyntaxError)) throw e;
    throw new DcgmKindError("dcgm-failed", `dcgmi diag wrote a document that is not JSON (${e.message})`, {
      cause: e,
    });
  }
  const top = _object(doc) ?? {};
  const root = _object(top["DCGM GPU Diagnostic"]) ?? _object(top["DCGM Diagnostic"]) ?? top;
  const err = root.runtime_error ?? top.runtime_error;
  if (typeof err === "string" && err.length > 0) {
    throw new DcgmKindError("dcgm-failed", `dcgmi diag could not run: ${err.slice(0, 512)}`);
  }
  const uuidOf = new Map(run.gpus.map((g) => [g.id, g.uuid]));
  const tests: DcgmTestResult[] = [];
  const cats = Array.isArray(root.test_categories) ? root.test_categories : [];
  for (const c of cats) {
    const cat = _object(c);
    for (const t of Array.isArray(cat?.tests) ? cat.tests : []) {
      const test = _object(t); // DCGM 3.x writes `null` between tests
      if (!test || typeof test.name !== "string") continue;
      for (const r0 of Array.isArray(test.results) ? test.results : []) {
        const r = _object(r0);
        if (!r) continue;
        const st = _status(r.status);
        const msg = [...(st.note ? [st.note] : []), ..._texts(r.warnings)];
        const message = (msg.length > 0 ? msg : _texts(r.info)).join("; ").slice(0, 2048);
        const ids = _gpuIds(r);
        for (const id of ids.length > 0 ? ids : [undefined]) {
          if (tests.length >= MAX_DCGM_RESULTS) {
            throw new DcgmKindError("dcgm-failed", `dcgmi diag reported more than ${MAX_DCGM_RESULTS} results`);
          }
          const uuid = id === undefined ? "" : uuidOf.get(id);
          tests.push({
            name: test.name.slice(0, 256),
            gpu_uuid: uuid ?? "",
            result: st.result,
            message: uuid === undefined ? [`DCGM GPU id ${id} is not a GPU asked for`, message].join("; ") : message,
          });
        }
      }
    }
  }
  if (tests.length === 0) {
    throw new DcgmKindError("dcgm-failed", `dcgmi diag exited ${run.exitCode} with no test results: ${words}`);
  }
  return { passed: tests.every((t) => t.result !== "fail"), tests, raw_json: raw };
}

/** Runs `diag.dcgm`. Throws {@link GpuKindError} or {@link DcgmKindError} for a failure of the whole command. */
export async function diagDcgm(payload: unknown, ports: DiagDcgmPorts): Promise<DiagDcgmResult> {
  const p = checkDiagDcgmPayload(payload);
  if (p.level >= 2) {
    const live = await ports.holds();
    const who = dcgmBusy(p.gpu_uuids, live.holds, live.unreadable, ports.passthrough());
    if (who) throw new GpuKindError("gpu-busy", `diag.dcgm level ${p.level}: ${who}`);
  }
  const run = await ports.dcgm.diag(p.level, p.gpu_uuids);
  if (run === null) throw new DcgmKindError("no-dcgm", "diag.dcgm: dcgmi is not installed on this host");
  return parseDcgmDiag(run);
}
