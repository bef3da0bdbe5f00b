import assert from "node:assert/strict";
import { parseDcgmDiag } from "../../core/converge/devices/diag_dcgm.ts";
import { diagDcgmHandler } from "../../core/converge/devices/gpu_kind_handlers.ts";
import { GpuToolError } from "../../core/converge/devices/ports.ts";
import { commandBody } from "../../core/commands/command.ts";
import { CommandFailed } from "../../core/commands/rejection.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { packPayload, unpackResult } from "../../proto/mod.ts";
import { HelperDcgm } from "../helper/ports.ts";
import { startTestHelper } from "../helper/helper_testing.ts";
import { Dcgmi, parseIndexUuid } from "./dcgmi.ts";

const FIX = new URL("../../fixtures/dcgm/", import.meta.url).pathname;
const UUIDS = Array.from({ length: 8 }, (_, i) => `GPU-${String(i).padStart(8, "0")}-aaaa-bbbb-cccc-dddddddddddd`);

/** A temp dir with a fake nvidia-smi (index,uuid of 8 GPUs) and a dcgmi wrapper over fixtures/dcgm/fake-dcgmi. */
async function fakeTools(doc: string, rc = 0, err = "") {
  const dir = await Deno.makeTempDir({ prefix: "bcd-dcgmi-" });
  const log = `${dir}/dcgmi.log`;
  const smi = `${dir}/nvidia-smi`;
  await Deno.writeTextFile(
    smi,
    `#!/bin/sh\n[ "$1" = "--query-gpu=index,uuid" ] && [ "$2" = "--format=csv,noheader" ] || exit 2\n` +
      UUIDS.map((u, i) => `echo '${i}, ${u}'`).join("\n") + "\n",
  );
  const dcgmi = `${dir}/dcgmi`;
  await Deno.writeTextFile(
    dcgmi,
    `#!/bin/sh\nexport FAKE_DCGMI_LOG='${log}' FAKE_DCGMI_DOC='${FIX}${doc}' FAKE_DCGMI_RC=${rc} FAKE_DCGMI_ERR='${err}'\n` +
      `exec '${FIX}fake-dcgmi' "$@"\n`,
  );
  await Deno.chmod(smi, 0o755);
  await Deno.chmod(dcgmi, 0o755);
  const argv = async () => (await Deno.readTextFile(log)).trim().split("\n");
  return { dir, smi, dcgmi, argv, close: () => Deno.remove(dir, { recursive: true }) };
}

Deno.test("parseIndexUuid reads nvidia-smi's index,uuid CSV and refuses anything else", () => {
  assert.deepEqual(parseIndexUuid("0, GPU-a-b\n1, GPU-c-d\n"), [{ id: 0, uuid: "GPU-a-b" }, {
    id: 1,
    uuid: "GPU-c-d",
  }]);
  assert.throws(() => parseIndexUuid("No devices were found\n"), GpuToolError);
});

Deno.test("Dcgmi runs dcgmi diag -r LEVEL -j -i <ids of the UUIDs asked for> and hands back the document", async () => {
  const t = await fakeTools("diag_r1_dcgm310_pass.txt");
  try {
    const d = new Dcgmi({ dcgmi: t.dcgmi, nvidiaSmi: t.smi, timeoutMs: 60_000 });
    for (const level of [1, 2, 3, 4] as const) {
      const r = await d.diag(level, [UUIDS[3]!, UUIDS[1]!]);
      assert.ok(r);
      assert.equal(r.exitCode, 0);
      assert.deepEqual(r.gpus, [{ id: 3, uuid: UUIDS[3] }, { id: 1, uuid: UUIDS[1] }]);
    }
    const all = await d.diag(1, []);
    assert.equal(all!.gpus.length, 8);
    assert.equal(parseDcgmDiag(all!).tests.length, 80);
    assert.deepEqual(await t.argv(), [
      "diag -r 1 -j -i 3,1",
      "diag -r 2 -j -i 3,1",
      "diag -r 3 -j -i 3,1",
      "diag -r 4 -j -i 3,1",
      "diag -r 1 -j",
    ]);
    await assert.rejects(d.diag(2, ["GPU-ffffffff-0000-0000-0000-000000000000"]), /not on this host/);
  } finally {
    await t.close();
  }
});

Deno.test("Dcgmi: a failing run keeps its exit status and document; a host without dcgmi answers null", async () => {
  const t = await fakeTools("diag_dcgm423_gb10_fail.txt", 226, "diag failed");
  try {
    const r = await new Dcgmi({ dcgmi: t.dcgmi, nvidiaSmi: t.smi, timeoutMs: 60_000 }).diag(1, [UUIDS[0]!]);
    assert.equal(r!.exitCode, 226);
    assert.equal(r!.stderr, "diag failed");
    assert.equal(parseDcgmDiag(r!).passed, false);
    assert.equal(await new Dcgmi({ dcgmi: `${t.dir}/absent-dcgmi`, nvidiaSmi: t.smi }).diag(1, []), null);
  } finally {
    await t.close();
  }
});

Deno.test("diag.dcgm end to end through the helper socket: node and ramdisk helpers run it, the result decodes as DiagDcgmResult", async () => {
  const t = await fakeTools("diag_dcgm423_gb10_fail.txt", 226);
  const d = new Dcgmi({ dcgmi: t.dcgmi, nvidiaSmi: t.smi, timeoutMs: 60_000 });
  try {
    for (const role of ["node", "ramdisk"] as const) {
      const h = await startTestHelper({ role, dcgmDiag: (level, uuids) => d.diag(level, uuids) });
      try {
        const handler = diagDcgmHandler({
          dcgm: new HelperDcgm(h.client),
          holds: () => Promise.resolve({ holds: [], unreadable: [] }),
          passthrough: () => [],
        });
        const p = packPayload("diag.dcgm", { gpu_uuids: [UUIDS[0]!], level: 2 });
        const ctx = {
          command: commandBody({
            id: "c",
            nodeId: "n",
            kind: "diag.dcgm",
            payload: { typeUrl: p.type_url, value: p.value },
          }),
          signal: new AbortController().signal,
          bootId: "b",
          logger: silentLogger(),
        };
        const r = await handler.run(ctx);
        const res = unpackResult("diag.dcgm", { type_url: r.result!.typeUrl, value: r.result!.value });
        assert.equal(!!res.passed, false);
        assert.deepEqual(res.tests?.map((x) => [x.name, x.gpu_uuid, x.result]), [["software", UUIDS[0], "fail"]]);
        // the helper refuses a level dcgmi has not, whatever the node sends
        await assert.rejects(
          h.client.call("dcgm.diag", { level: 7 as 1, gpuUuids: [] }),
          (e) => e instanceof Error && /level/.test(e.message),
        );
        // a GPU the host does not have is dcgmi's failure, the command's dcgm-failed
        const other = packPayload("diag.dcgm", { gpu_uuids: ["GPU-ffffffff-0000-0000-0000-000000000000"], level: 1 });
        await assert.rejects(
          handler.run({
            ...ctx,
            command: { ...ctx.command, payload: { typeUrl: other.type_url, value: other.value } },
          }),
          (e) => e instanceof CommandFailed && e.code === "dcgm-failed" && /not on this host/.test(e.message),
        );
      } finally {
        await h.close();
      }
    }
  } finally {
    await t.close();
  }
});
