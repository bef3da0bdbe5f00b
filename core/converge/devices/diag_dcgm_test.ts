import assert from "node:assert/strict";
import { packPayload, unpackResult } from "../../../proto/mod.ts";
import { commandBody } from "../../commands/command.ts";
import { CommandFailed, InvalidPayload } from "../../commands/rejection.ts";
import { silentLogger } from "../../log/mod.ts";
import { type DcgmLevel, type DcgmRun, type DcgmTool, diagDcgm, MAX_DCGM_JSON, parseDcgmDiag } from "./diag_dcgm.ts";
import { GpuKindError } from "./gpu_reset.ts";
import { diagDcgmHandler } from "./gpu_kind_handlers.ts";
import type { ObservedHold, UnreadableHold } from "./hold.ts";
import { sampleUuid } from "./inventory_testing.ts";

const FIX = new URL("../../../fixtures/dcgm/", import.meta.url).pathname;
const G = Array.from({ length: 8 }, (_, i) => sampleUuid(i));
const GPUS = G.map((uuid, id) => ({ id, uuid }));

/** A captured document as the fake dcgmi prints it: its '#' header lines dropped. */
function capture(name: string): string {
  return Deno.readTextFileSync(`${FIX}${name}`).split("\n").filter((l) => !l.startsWith("#")).join("\n");
}

const PASS_R1 = capture("diag_r1_dcgm310_pass.txt");
const FAIL_GB10 = capture("diag_dcgm423_gb10_fail.txt");

/** A DcgmTool answering `run` and recording its calls. */
class ScriptedDcgm implements DcgmTool {
  calls: [DcgmLevel, readonly string[]][] = [];
  constructor(private readonly answer: DcgmRun | null) {}
  diag(level: DcgmLevel, gpuUuids: readonly string[]) {
    this.calls.push([level, gpuUuids]);
    return Promise.resolve(this.answer);
  }
}

const HOLD: ObservedHold = {
  allocationId: "alloc-1",
  binding: "hold",
  devices: [{ class: "gpu", atom: G[2]!, gpuUuid: G[2]! }],
  env: [],
};

function ports(answer: DcgmRun | null, holds: ObservedHold[] = [], unreadable: UnreadableHold[] = []) {
  const dcgm = new ScriptedDcgm(answer);
  return { dcgm, holds: () => Promise.resolve({ holds, unreadable }), passthrough: () => [] };
}

const run = (stdout: string, exitCode = 0, gpus = GPUS): DcgmRun => ({ exitCode, stdout, stderr: "", gpus });

Deno.test("diag.dcgm parses DCGM 3.1.0's level-1 document: one result per test and GPU, by UUID, all passed", () => {
  const r = parseDcgmDiag(run(PASS_R1));
  assert.equal(r.passed, true);
  // 9 deployment tests on GPUs 0-7 (a CSV gpu_ids) and the per-GPU `software` test (numeric gpu_ids)
  assert.equal(r.tests.length, 10 * 8);
  assert.deepEqual(r.tests.slice(0, 2), [
    { name: "Denylist", gpu_uuid: G[0], result: "pass", message: "" },
    { name: "Denylist", gpu_uuid: G[1], result: "pass", message: "" },
  ]);
  assert.deepEqual(r.tests.at(-1), { name: "software", gpu_uuid: G[7], result: "pass", message: "" });
  assert.ok(r.raw_json.startsWith("{"), "dcgmi's chatter line before the document is not kept");
  assert.equal(JSON.parse(r.raw_json)["DCGM GPU Diagnostic"].version, "3.1.0");
});

Deno.test("diag.dcgm parses DCGM 4.2.3's failing document (entity ids): the test fails with dcgmi's words", () => {
  const r = parseDcgmDiag(run(FAIL_GB10, 226, [{ id: 0, uuid: G[0]! }]));
  assert.equal(r.passed, false);
  assert.equal(r.tests.length, 1);
  assert.equal(r.tests[0]!.name, "software");
  assert.equal(r.tests[0]!.gpu_uuid, G[0]);
  assert.equal(r.tests[0]!.result, "fail");
  assert.match(r.tests[0]!.message, /Persistence mode for GPU 0 is disabled/);
});

Deno.test("diag.dcgm: an unknown status fails closed; warn and not-run do not fail the run", () => {
  const doc = (status: string) =>
    JSON.stringify({
      "DCGM GPU Diagnostic": {
        test_categories: [{ category: "Hardware", tests: [{ name: "Memory", results: [{ gpu_ids: "0", status }] }] }],
      },
    });
  assert.deepEqual(parseDcgmDiag(run(doc("Warn"))).passed, true);
  assert.deepEqual(parseDcgmDiag(run(doc("Not Run"))).tests[0]!.result, "skip");
  const odd = parseDcgmDiag(run(doc("Mystery")));
  assert.equal(odd.passed, false);
  assert.equal(odd.tests[0]!.result, "fail");
  assert.match(odd.tests[0]!.message, /unknown status "Mystery"/);
});

Deno.test("diag.dcgm: no document, a runtime_error, no results, or an oversized document fail dcgm-failed", () => {
  const failed = (stdout: string, re: RegExp) =>
    assert.throws(
      () => parseDcgmDiag({ ...run(stdout, 255), stderr: "Error: unable to connect to host engine" }),
      (e) => e instanceof Error && (e as { reason?: string }).reason === "dcgm-failed" && re.test(e.message),
    );
  failed("", /without a document: Error: unable to connect/);
  failed('{"DCGM GPU Diagnostic": {"runtime_error": "The diagnostic cannot run: MIG is enabled"}}', /MIG is enabled/);
  failed('{"DCGM Diagnostic": {"version": "4.2.3"}}', /no test results/);
  failed("{not json", /not JSON/);
  failed(`{"x":"${"a".repeat(MAX_DCGM_JSON)}"}`, /more than 1048576 bytes/);
});

Deno.test("diag.dcgm: levels outside 1-4 are invalid-payload before dcgmi runs", async () => {
  for (const level of [0, 5, "1"]) {
    const p = ports(run(PASS_R1));
    await assert.rejects(
      diagDcgm({ level, gpu_uuids: [] }, p),
      (e) => e instanceof GpuKindError && e.reason === "invalid-payload",
    );
    assert.equal(p.dcgm.calls.length, 0);
  }
  await assert.rejects(
    diagDcgm({ level: 1, gpu_uuids: ["MIG-abc"] }, ports(null)),
    (e) => e instanceof GpuKindError && e.reason === "invalid-payload",
  );
});

Deno.test("diag.dcgm: from level 2 a held GPU fails gpu-busy naming the hold; level 1 runs beside it", async () => {
  for (const level of [2, 3, 4]) {
    const p = ports(run(PASS_R1), [HOLD]);
    await assert.rejects(
      diagDcgm({ level, gpu_uuids: [G[2]!] }, p),
      (e) => e instanceof GpuKindError && e.reason === "gpu-busy" && /allocation alloc-1/.test(e.message),
    );
    // every GPU (an empty list) is busy while any is held
    await assert.rejects(
      diagDcgm({ level, gpu_uuids: [] }, p),
      (e) => e instanceof GpuKindError && e.reason === "gpu-busy",
    );
    assert.equal(p.dcgm.calls.length, 0, "dcgmi never runs on a held GPU");
    // another GPU is free
    await diagDcgm({ level, gpu_uuids: [G[0]!] }, p);
    assert.deepEqual(p.dcgm.calls, [[level, [G[0]]]]);
  }
  const p1 = ports(run(PASS_R1), [HOLD]);
  const r = await diagDcgm({ level: 1, gpu_uuids: [G[2]!] }, p1);
  assert.equal(r.passed, true);
  assert.deepEqual(p1.dcgm.calls, [[1, [G[2]]]]);
});

Deno.test("diag.dcgm: an unreadable hold keeps every GPU busy from level 2 (it may hold any)", async () => {
  const p = ports(run(PASS_R1), [], [{
    allocationId: "alloc-x",
    path: "/etc/cdi/bcd-alloc-x.json",
    problem: "bad JSON",
  }]);
  await assert.rejects(
    diagDcgm({ level: 2, gpu_uuids: [G[0]!] }, p),
    (e) => e instanceof GpuKindError && e.reason === "gpu-busy" && /alloc-x cannot be read/.test(e.message),
  );
  await assert.rejects(
    diagDcgm({ level: 2, gpu_uuids: [] }, p),
    (e) => e instanceof GpuKindError && e.reason === "gpu-busy",
  );
});

Deno.test("diag.dcgm: a host without dcgmi fails no-dcgm", async () => {
  await assert.rejects(
    diagDcgm({ level: 1, gpu_uuids: [] }, ports(null)),
    (e) => e instanceof Error && (e as { reason?: string }).reason === "no-dcgm",
  );
});

function ctx(level: number, gpu_uuids: string[]) {
  const p = packPayload("diag.dcgm", { gpu_uuids, level });
  return {
    command: commandBody({ id: "c", nodeId: "n", kind: "diag.dcgm", payload: { typeUrl: p.type_url, value: p.value } }),
    signal: new AbortController().signal,
    bootId: "b",
    logger: silentLogger(),
  };
}

Deno.test("diag.dcgm handler: locks the GPUs from level 2, answers DiagDcgmResult, maps failures to reasons", async () => {
  const h = diagDcgmHandler(ports(run(FAIL_GB10, 226, [{ id: 0, uuid: G[0]! }]), [HOLD]));
  assert.deepEqual(h.resources!(ctx(1, [G[0]!]).command), []);
  assert.deepEqual(h.resources!(ctx(3, [G[0]!, G[1]!]).command), [`gpu:${G[0]}`, `gpu:${G[1]}`]);
  assert.throws(() => h.resources!(ctx(0, []).command), InvalidPayload);
  const r = await h.run(ctx(1, [G[0]!]));
  const res = unpackResult("diag.dcgm", { type_url: r.result!.typeUrl, value: r.result!.value });
  assert.equal(!!res.passed, false);
  assert.deepEqual(res.tests?.map((t) => [t.name, t.gpu_uuid, t.result]), [["software", G[0], "fail"]]);
  assert.ok((res.raw_json ?? "").includes('"4.2.3"'));
  await assert.rejects(h.run(ctx(2, [G[2]!])), (e) => e instanceof CommandFailed && e.code === "gpu-busy");
  const none = diagDcgmHandler(ports(null));
  await assert.rejects(none.run(ctx(1, [])), (e) => e instanceof CommandFailed && e.code === "no-dcgm");
  const bad = diagDcgmHandler(ports(run("", 255)));
  await assert.rejects(bad.run(ctx(1, [])), (e) => e instanceof CommandFailed && e.code === "dcgm-failed");
});
