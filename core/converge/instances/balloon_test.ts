/** The instances converger and the balloon loop together (000 §Memory ballooning): who is ballooned, and admission. */
import assert from "node:assert/strict";
import { silentLogger } from "../../log/mod.ts";
import { ConvergenceEngine } from "../engine.ts";
import { InstancesConverger } from "./converger.ts";
import { MemoryRuntime } from "./fake_runtime.ts";
import { BalloonLoop } from "../../balloon/loop.ts";
import { ScriptedPressure } from "../../balloon/fake_balloons.ts";
import { FakeClock } from "../../../fixtures/clock/fake_clock.ts";

const GiB = 2 ** 30;
const vm = (id: string, memGiB: number, placement: Record<string, unknown> | undefined, state = 1) => ({
  id,
  runtime: "libvirt-kvm",
  state,
  vcpus: 1,
  memory_bytes: memGiB * GiB,
  ...(placement ? { placement } : {}),
});

function setup() {
  const rt = new MemoryRuntime("libvirt-kvm");
  // 8 GiB host, no huge pages: 7 GiB left after the 1 GiB headroom.
  const conv = new InstancesConverger([rt], {
    memory: { read: () => Promise.resolve({ memTotalBytes: 8 * GiB, hugetlbBytes: 0 }) },
  });
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger() });
  let gen = 0;
  const pass = async (instances: Record<string, unknown>[]) => {
    engine.hold({ generation: ++gen, specHash: `h${gen}`, sections: { instances: { instances } } });
    return (await engine.pass()).sections.find((s) => s.section === "instances")!;
  };
  const pressure = new ScriptedPressure({ memTotalBytes: 8 * GiB, memAvailableBytes: 0, someAvg10: 40 });
  const loop = new BalloonLoop({
    pressure,
    candidates: () => conv.balloonCandidates(),
    port: (name) => name === rt.name ? rt : undefined,
    floorPercent: 50,
    clock: new FakeClock(),
    log: silentLogger(),
  });
  return { rt, conv, pass, loop, pressure };
}

Deno.test("balloon candidates are the running, managed guests whose spec asks for a balloon, never on huge pages", async () => {
  const h = setup();
  await h.pass([
    vm("ballooned", 1, { balloon: true }),
    vm("huge", 1, { balloon: true, hugepages: 1 }),
    vm("plain", 1, { cpus: "0" }),
    vm("stopped", 1, { balloon: true }, 3),
  ]);
  assert.deepEqual(h.conv.balloonCandidates(), [{ id: "ballooned", runtime: "libvirt-kvm", memoryBytes: GiB }]);
  await h.loop.pass();
  assert.deepEqual(h.rt.calls.filter((c) => c.startsWith("setBalloon")), [`setBalloon ballooned ${0.75 * GiB}`]);
});

Deno.test("admission still charges a ballooned guest its full memory: an inflated balloon lets no more guests start", async () => {
  const h = setup();
  await h.pass([vm("a", 4, { balloon: true })]);
  for (let i = 0; i < 4; i++) await h.loop.pass();
  assert.equal(h.rt.balloons.get("a"), 2 * GiB, "the balloon took a down to its 50% floor");
  assert.deepEqual(h.loop.reclaimed(), [{ instance: "a", bytes: 2 * GiB }]);
  // a commits 4 GiB + 384 MiB of the 7 GiB; b needs 2.5 GiB + 336 MiB. Counting a's balloon it would fit; it must not.
  const s = await h.pass([vm("a", 4, { balloon: true }), vm("b", 2.5, undefined)]);
  assert.equal(s.reason, "ResourcesExhausted");
  assert.equal((await h.rt.list()).find((d) => d.id === "b")?.state, "stopped");
  assert.equal(
    h.conv.report().find((r) => r.id === "b")?.message,
    "ResourcesExhausted: 2896 MiB of memory needed, 2688 MiB left on this host",
  );
});
