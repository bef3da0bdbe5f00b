/** The instances converger's host-side admission and pass order (000 §Instances), over the sim's file runtime. */
import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import { ConvergenceEngine } from "../../core/converge/engine.ts";
import { InstancesConverger } from "../../core/converge/instances/mod.ts";
import type { HostMemory } from "../../core/converge/devices/admission.ts";
import { FileRuntime } from "./file_runtime.ts";

const GiB = 2 ** 30;
const vm = (id: string, state: number, memGiB: number) => ({
  id,
  runtime: "sim",
  state,
  vcpus: 1,
  memory_bytes: memGiB * GiB,
});

async function setup(memory: { current: HostMemory | Error }, runtimes = true) {
  const dir = await Deno.makeTempDir({ prefix: "bcd-inst-adm-" });
  const rt = new FileRuntime(dir);
  const conv = new InstancesConverger(runtimes ? [rt] : [], {
    memory: {
      read: () => memory.current instanceof Error ? Promise.reject(memory.current) : Promise.resolve(memory.current),
    },
  });
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
  let gen = 0;
  const pass = async (instances: Record<string, unknown>[]) => {
    engine.hold({ generation: ++gen, specHash: `h${gen}`, sections: { instances: { instances } } });
    return (await engine.pass()).sections.find((s) => s.section === "instances")!;
  };
  return { dir, rt, conv, pass, close: () => Deno.remove(dir, { recursive: true }) };
}

Deno.test("a start beyond host memory stays stopped with ResourcesExhausted (PROGRESSING, not ERROR) and starts once memory frees", async () => {
  // 8 GiB host, no huge pages: 7 GiB left after the 1 GiB headroom. A 4 GiB VM commits 4 GiB + 384 MiB.
  const mem = { current: { memTotalBytes: 8 * GiB, hugetlbBytes: 0 } as HostMemory | Error };
  const h = await setup(mem);
  try {
    const s = await h.pass([vm("a", 1, 4), vm("b", 1, 4)]);
    assert.equal(s.state, "PROGRESSING");
    assert.equal(s.reason, "ResourcesExhausted");
    const byId = Object.fromEntries((await h.rt.list()).map((d) => [d.id, d.state]));
    assert.deepEqual(byId, { a: "running", b: "stopped" });
    const rb = h.conv.report().find((r) => r.id === "b")!;
    assert.equal(rb.state, "STOPPED");
    assert.equal(rb.message, "ResourcesExhausted: 4480 MiB of memory needed, 2688 MiB left on this host");
    assert.notEqual(h.conv.report().find((r) => r.id === "b")!.state, "ERROR");
    await h.pass([vm("a", 1, 4), vm("b", 1, 4)]);
    assert.equal((await h.rt.list()).find((d) => d.id === "b")!.state, "stopped", "tried again, still too big");
    // a stops in the same pass b starts: stops go first, so b fits.
    const s3 = await h.pass([vm("a", 3, 4), vm("b", 1, 4)]);
    assert.equal(s3.state, "CONVERGED");
    assert.deepEqual(Object.fromEntries((await h.rt.list()).map((d) => [d.id, d.state])), {
      a: "stopped",
      b: "running",
    });
    assert.equal(h.conv.report().find((r) => r.id === "b")!.message, "");
  } finally {
    await h.close();
  }
});

Deno.test("a resume from PAUSED is not a start: it is not admitted again", async () => {
  const mem = { current: { memTotalBytes: 8 * GiB, hugetlbBytes: 0 } as HostMemory | Error };
  const h = await setup(mem);
  try {
    assert.equal((await h.pass([vm("a", 2, 4)])).state, "CONVERGED");
    mem.current = { memTotalBytes: 2 * GiB, hugetlbBytes: 0 };
    assert.equal((await h.pass([vm("a", 1, 4)])).state, "CONVERGED");
    assert.equal((await h.rt.list())[0]!.state, "running");
  } finally {
    await h.close();
  }
});

Deno.test("a host whose memory cannot be read starts without the check", async () => {
  const h = await setup({ current: new Error("no /proc/meminfo") });
  try {
    assert.equal((await h.pass([vm("a", 1, 64)])).state, "CONVERGED");
    assert.equal((await h.rt.list())[0]!.state, "running");
  } finally {
    await h.close();
  }
});

Deno.test("a non-empty section on a host with no runtime fails: this host runs no instance runtime", async () => {
  const h = await setup({ current: { memTotalBytes: 8 * GiB, hugetlbBytes: 0 } }, false);
  try {
    const s = await h.pass([vm("a", 1, 1)]);
    assert.equal(s.state, "FAILED");
    assert.equal(s.reason, "InstanceFailed");
    assert.match(s.message ?? "", /this host runs no instance runtime/);
    assert.equal((await h.pass([])).state, "CONVERGED");
  } finally {
    await h.close();
  }
});
