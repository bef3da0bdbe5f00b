/**
 * `deno task bench:converge-ab -- DIR`: this checkout's idle convergence pass against another's (a `git worktree` of
 * the base commit), both loaded into one process and run in alternating rounds (ABBA), so that the load of a shared
 * host falls on both alike. Each side builds the rig of `bench:converge` from its own modules (64 slot holds on 8 fake
 * GPUs + 100 instances on the file-backed runtime, each in its own temp directory), runs the first pass, then per round
 * a batch of idle passes; it prints each side's median and p90 of the pass's wall time and of the event loop's CPU
 * (`/proc/thread-self/schedstat`), the devices and instances observe+plan medians, and the median over rounds of this
 * checkout's figure divided by the other's in the same round. Asserts nothing about speed.
 *
 * With `--limits` every hold carries CPU and memory limits, so each has its hold slice (on the sim's cgroup tree) and
 * the pass reads each slice's huge page usage.
 *
 * usage: converge_ab.ts DIR [--rounds N] [--passes N] [--limits]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { threadClock } from "./commands_stages.ts";
import { convergeRig, type RigModules } from "./converge_rig.ts";

interface Figures {
  wall: number[];
  cpu: number[];
  devices: number[];
  instances: number[];
}

interface Side {
  readonly name: string;
  /** Runs `n` idle passes; the wall and loop CPU of each (ms). */
  passes(n: number, into: Figures): Promise<void>;
  /** Runs `n` rounds of the devices and the instances converger's observe + plan alone. */
  stages(n: number, into: Figures): Promise<void>;
  close(): Promise<void>;
}

async function side(name: string, root: string, limits: boolean): Promise<Side> {
  const mods: RigModules = {
    ...await import(`${root}/proto/mod.ts`),
    ...await import(`${root}/core/converge/engine.ts`),
    ...await import(`${root}/core/converge/devices/mod.ts`),
    ...await import(`${root}/core/converge/instances/mod.ts`),
    ...await import(`${root}/core/log/mod.ts`),
    ...await import(`${root}/runtimes/cdi/mod.ts`),
    ...await import(`${root}/runtimes/cgroup/mod.ts`),
    ...await import(`${root}/runtimes/fakehw/file_runtime.ts`),
    ...await import(`${root}/runtimes/nvidia/mod.ts`),
  };
  const rig = await convergeRig(mods, { limits, prefix: `bcd-bench-converge-${name}-` });
  const { engine, devices, instances, assignments, vms } = rig;
  const log = mods.silentLogger();
  return {
    name,
    async passes(n, into) {
      for (let i = 0; i < n; i++) {
        const c0 = threadClock().cpu;
        const t0 = performance.now();
        const s = await engine.pass();
        into.wall.push(performance.now() - t0);
        into.cpu.push((threadClock().cpu - c0) / 1000);
        if (s.sections.some((x: { state: string }) => x.state !== "CONVERGED")) {
          throw new Error(`${name}: an idle pass did not stay converged`);
        }
      }
    },
    async stages(n, into) {
      for (let i = 0; i < n; i++) {
        let t = performance.now();
        const actions = devices.plan({ assignments }, await devices.observe({ generation: 1, log }, { assignments }));
        into.devices.push(performance.now() - t);
        t = performance.now();
        const acts = instances.plan({ instances: vms }, await instances.observe());
        into.instances.push(performance.now() - t);
        if (actions.length !== 0 || acts.length !== 0) throw new Error(`${name}: an idle plan has actions`);
      }
    },
    close: () => Deno.remove(rig.dir, { recursive: true }),
  };
}

const pct = (xs: readonly number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const med = (xs: readonly number[]) => pct(xs, 0.5);

const { values, positionals } = parseArgs({
  args: Deno.args,
  options: {
    rounds: { type: "string", default: "12" },
    passes: { type: "string", default: "20" },
    limits: { type: "boolean", default: false },
  },
  allowPositionals: true,
});
const other = positionals[0];
if (!other) {
  console.error("usage: converge_ab.ts DIR [--rounds N] [--passes N] [--limits]");
  Deno.exit(2);
}
const rounds = Number(values.rounds);
const passes = Number(values.passes);
const here = new URL("..", import.meta.url).href.replace(/\/$/, "");
const there = new URL(`file://${await Deno.realPath(other)}`).href;
const sides = [await side("head", here, values.limits), await side("base", there, values.limits)];
const figs = new Map(sides.map((s) => [s.name, [] as Figures[]]));
for (let r = 0; r < rounds; r++) {
  const order = r % 2 === 0 ? sides : [...sides].reverse();
  for (const s of order) {
    const f: Figures = { wall: [], cpu: [], devices: [], instances: [] };
    await s.passes(passes, f);
    await s.stages(Math.max(1, passes >> 1), f);
    figs.get(s.name)!.push(f);
  }
}
const out = (s: string) => Deno.stdout.writeSync(new TextEncoder().encode(s + "\n"));
const what = values.limits ? "64 slot holds with slices" : "64 slot holds";
out(`idle convergence pass (${what} on 8 GPUs + 100 instances), ${rounds} rounds × ${passes} passes, ABBA:`);
const keys = ["wall", "cpu", "devices", "instances"] as const;
for (const s of sides) {
  const all = (k: keyof Figures) => figs.get(s.name)!.flatMap((f) => f[k]);
  out(
    `  ${s.name}: pass median ${med(all("wall")).toFixed(2)} ms, p90 ${pct(all("wall"), 0.9).toFixed(2)} ms ` +
      `(goal ≤ 5 ms median); loop CPU median ${med(all("cpu")).toFixed(2)} ms, p90 ${
        pct(all("cpu"), 0.9).toFixed(2)
      } ms; devices observe+plan ${med(all("devices")).toFixed(2)} ms, instances ${
        med(all("instances")).toFixed(2)
      } ms`,
  );
}
const ratios = keys.map((k) => {
  const per = figs.get("head")!.map((f, i) => med(f[k]) / med(figs.get("base")![i]![k]));
  return `${k} ${med(per).toFixed(2)}`;
});
out(`  head/base, median over rounds of the same round's medians: ${ratios.join(", ")}`);
for (const s of sides) await s.close();
