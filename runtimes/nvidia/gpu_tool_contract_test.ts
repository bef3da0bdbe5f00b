/**
 * One contract for every GpuTool: the real `NvidiaSmi` (driving `fixtures/nvidia/fake-nvidia-smi`, which prints
 * the HGX fixture), the sim role's file-backed `FakeGpuTool`, and the unprivileged node's `HelperGpuTool` (queries in
 * the node, NUMA nodes and resets through a root helper served in-process).
 */
import assert from "node:assert/strict";
import { type GpuTool, GpuToolError } from "../../core/converge/devices/ports.ts";
import { FakeGpuTool } from "./fake_gpu_tool.ts";
import { hgxInventory } from "./hgx.ts";
import { NvidiaSmi, sysfsBdf } from "./nvidia_smi.ts";
import { HelperGpuTool } from "../helper/ports.ts";
import { startTestHelper } from "../helper/helper_testing.ts";

const FIX = new URL("../../fixtures/nvidia/", import.meta.url).pathname;
const HGX = hgxInventory();
const MIG_GPU = HGX.gpus[2]!.uuid;

interface Subject {
  tool: GpuTool;
  /** Make the next reset of a known GPU fail with `msg`. */
  failResets(msg: string): Promise<void>;
  resets(): Promise<string[]>;
  close?(): Promise<void>;
}

async function realSubject(dir: string): Promise<Subject> {
  const sysfs = `${dir}/sys/bus/pci/devices`;
  for (const g of HGX.gpus) {
    await Deno.mkdir(`${sysfs}/${sysfsBdf(g.pciBusId)}`, { recursive: true });
    await Deno.writeTextFile(`${sysfs}/${sysfsBdf(g.pciBusId)}/numa_node`, `${g.numaNode}\n`);
  }
  const log = `${dir}/argv.log`;
  const env = `${dir}/env.sh`;
  await Deno.writeTextFile(env, "");
  const bin = `${dir}/nvidia-smi`;
  await Deno.writeTextFile(
    bin,
    `#!/bin/sh\nexport FAKE_SMI_LOG='${log}' FAKE_SMI_XML='${FIX}hgx8_mig2.xml' FAKE_SMI_LIST='${FIX}hgx8_mig2.list.txt'\n. '${env}'\nexec '${FIX}fake-nvidia-smi' "$@"\n`,
  );
  await Deno.chmod(bin, 0o755);
  return {
    tool: new NvidiaSmi({ binary: bin, sysfsPciDevices: sysfs, timeoutMs: 20_000 }),
    failResets: (msg) => Deno.writeTextFile(env, `export FAKE_SMI_RESET_RC=15 FAKE_SMI_RESET_MSG='${msg}'\n`),
    resets: async () =>
      (await Deno.readTextFile(log)).split("\n").filter((l) => l.startsWith("--gpu-reset")).map((l) =>
        l.split(" ")[2]!
      ),
  };
}

async function fakeSubject(dir: string): Promise<Subject> {
  const t = await FakeGpuTool.create(`${dir}/gpus.json`);
  return {
    tool: t,
    failResets: async (msg) => {
      const s = await t.read();
      s.resetFailures = Object.fromEntries(s.inventory.gpus.map((g) => [g.uuid, msg]));
      await t.write(s);
    },
    resets: async () => (await t.read()).resets ?? [],
  };
}

async function helperSubject(_dir: string): Promise<Subject> {
  const h = await startTestHelper();
  return {
    tool: new HelperGpuTool(h.client, { binary: h.smi, timeoutMs: 20_000 }),
    failResets: (msg) => Deno.writeTextFile(h.smiEnv, `export FAKE_SMI_RESET_RC=15 FAKE_SMI_RESET_MSG='${msg}'\n`),
    resets: async () => (await h.smiLog()).filter((l) => l.startsWith("--gpu-reset")).map((l) => l.split(" ")[2]!),
    close: () => h.close(),
  };
}

for (
  const [name, make] of [
    ["NvidiaSmi", realSubject],
    ["FakeGpuTool", fakeSubject],
    ["HelperGpuTool through the root helper", helperSubject],
  ] as const
) {
  Deno.test(`GpuTool contract (${name})`, async (t) => {
    const dir = await Deno.makeTempDir({ prefix: "bcd-gputool-" });
    let close: (() => Promise<void>) | undefined;
    try {
      const s: Subject = await make(dir);
      close = s.close;
      await t.step("query gives the board: 8 GPUs, NUMA nodes, MIG instances with their UUIDs", async () => {
        const inv = await s.tool.query();
        assert.deepEqual(inv.gpus.map((g) => g.uuid), HGX.gpus.map((g) => g.uuid));
        assert.deepEqual(inv.gpus.map((g) => g.numaNode), [0, 0, 0, 0, 1, 1, 1, 1]);
        assert.deepEqual(
          inv.gpus.find((g) => g.uuid === MIG_GPU)!.migInstances.map((m) => [m.gi, m.ci, m.uuid]),
          HGX.gpus[2]!.migInstances.map((m) => [m.gi, m.ci, m.uuid]),
        );
      });
      await t.step("reset of a known GPU succeeds and is recorded", async () => {
        await s.tool.reset(MIG_GPU);
        assert.deepEqual(await s.resets(), [MIG_GPU]);
      });
      await t.step("reset of an unknown GPU fails with nvidia-smi's message", async () => {
        await assert.rejects(
          s.tool.reset("GPU-00000000-0000-0000-0000-000000000000"),
          (e) => e instanceof GpuToolError && /No devices were found/.test(e.message),
        );
      });
      await t.step("a failed reset carries the tool's message", async () => {
        await s.failResets("Unable to reset this GPU because it is in use");
        await assert.rejects(s.tool.reset(MIG_GPU), (e) => e instanceof GpuToolError && /in use/.test(e.message));
      });
    } finally {
      await close?.();
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("FakeGpuTool: a reset clears volatile ECC and a pending remap, a failed remap stays", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-fakegpu-" });
  try {
    const t = await FakeGpuTool.create(`${dir}/gpus.json`);
    const [a, b] = [HGX.gpus[0]!.uuid, HGX.gpus[1]!.uuid];
    await t.update(a, (g) => ({ ...g, eccVolatileUncorrectable: 4, remap: { pending: true, failed: false } }));
    await t.update(b, (g) => ({ ...g, remap: { pending: false, failed: true } }));
    let inv = await t.query();
    assert.equal(inv.gpus[0]!.eccVolatileUncorrectable, 4);
    await t.reset(a);
    await t.reset(b);
    inv = await t.query();
    assert.equal(inv.gpus[0]!.eccVolatileUncorrectable, 0);
    assert.deepEqual(inv.gpus[0]!.remap, { pending: false, failed: false });
    assert.deepEqual(inv.gpus[1]!.remap, { pending: false, failed: true });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("NvidiaSmi skips -L when no GPU has MIG devices, and reads -1 NUMA as unknown", async () => {
  const calls: string[][] = [];
  const tool = new NvidiaSmi({
    sysfsPciDevices: "/nonexistent",
    run: (_cmd, args) => {
      calls.push([...args]);
      return Promise.resolve({ code: 0, stdout: Deno.readTextFileSync(`${FIX}single.xml`), stderr: "" });
    },
  });
  const inv = await tool.query();
  assert.deepEqual(calls, [["-q", "-x"]]);
  assert.equal(inv.gpus[0]!.numaNode, undefined);
});

Deno.test("FakeGpuTool: concurrent resets of different GPUs lose none", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-fakegpu-" });
  try {
    const t = await FakeGpuTool.create(`${dir}/gpus.json`);
    const other = new FakeGpuTool(t.path); // a second instance over the same file, as roles create them
    await Promise.all(HGX.gpus.map((g, i) => (i % 2 ? other : t).reset(g.uuid)));
    assert.deepEqual(((await t.read()).resets ?? []).sort(), HGX.gpus.map((g) => g.uuid).sort());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
