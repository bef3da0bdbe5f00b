/**
 * `deno task bench:start` (also the second half of `bench:converge`): an agent's time from process start to its first
 * `Hello`, the CPU it spent by then (all its threads, from `/proc/<pid>/task/<tid>/schedstat`: a figure a loaded
 * machine disturbs less than wall time) and its RSS then, against anchors measured in the same run, interleaved:
 *
 * - a bare `deno run` of an empty script (the goal's anchor: ≤ 2× it and ≤ 64 MiB);
 * - the floor: a minimal program bundled as the agents are, that opens a `node:sqlite` journal (WAL), writes one bcd
 *   log line to stderr and one encoded `NodeFrame` to stdout: what any agent built on these parts pays;
 * - the shipped sim's code loaded and none of it run (`_unrunSource`), when `make bundle` built it: what its start
 *   pays for the size of its code alone;
 * - the sim role from source with its own flags, the node role from source beside a real `bcd-helper`, and both as
 *   shipped (`make bundle`'s `dist/bcd-sim/bcd-sim`; `dist/bcd-node`'s own Deno on its bundle, with the role's flags
 *   plus the test helper's socket and fake `nvidia-smi`), when built; the shipped node's first start in a fresh
 *   `DENO_DIR` after the launcher's `warm-cache` (every chunk) and after the entry's own (its static graph).
 *
 * `--against DIR` (repeatable) runs the sim, node and shipped rows from another checkout too (a `git worktree` of the base
 * commit, with `deno install` and, for the shipped row, `make bundle` done there), in the same interleaved rounds, so a
 * change is measured before and after in one run. Prints figures; asserts nothing about speed.
 *
 * usage: start_bench.ts [--against DIR]... [--rounds N]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { helloServer } from "../fixtures/start/hello_server.ts";
import { roleFlags } from "../roles/permissions.ts";
import { BUNDLE_FLAGS } from "../roles/build.ts";
import { TestbedGateway } from "../fixtures/testbed/gateway.ts";
import { SimNode } from "../fixtures/testbed/sim_node.ts";
import { AgentWithHelper } from "../fixtures/testbed/node_helper.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/** One start: ms to the first Hello (or output), CPU ms by then, RSS MiB then. */
type Start = { ms: number; cpu: number; rss: number };

function _rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** CPU time of every thread of `pid` so far, ms. */
function _cpuMs(pid: number): number {
  let ns = 0;
  for (const t of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(Deno.readTextFileSync(`/proc/${pid}/task/${t.name}/schedstat`).split(" ")[0]);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e; // a thread that ended meanwhile
    }
  }
  return ns / 1e6;
}

/** Runs `cmd` until its first stdout byte. */
async function _toFirstOutput(cmd: string, args: string[], cwd?: string): Promise<Start> {
  const t0 = performance.now();
  const child = new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "null" }).spawn();
  const reader = child.stdout.getReader();
  await reader.read();
  const ms = performance.now() - t0;
  const start = { ms, cpu: _cpuMs(child.pid), rss: _rssMiB(child.pid) };
  child.kill("SIGKILL");
  await child.status;
  reader.releaseLock();
  return start;
}

/** Runs `cmd` to its end; throws unless it succeeds. */
async function _ranToEnd(cmd: string, args: string[]): Promise<void> {
  const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "piped" }).output();
  if (!out.success) throw new Error(`${args.join(" ")}: exit ${out.code}: ${new TextDecoder().decode(out.stderr)}`);
}

/**
 * How the scripts of the anchor rows end: held open after their output, as a start measured to its first output is
 * killed then; run with the argument `warm`, they return instead. Deno makes a module's V8 code cache when it compiles
 * it and writes it on a later turn of the event loop, which a script killed at the output it writes in its first turn
 * never reaches: each start of it would compile its code again. The warm-up runs each script once with `warm`, to its
 * end, so the anchors start from their code cache as the shipped agents do from theirs (`warm-cache`); before, the row
 * of the sim's code loaded and not run measured V8 compiling 318 KiB each time (1.59x bare, 1.1-1.3x from the cache).
 */
const _HOLD = `if (Deno.args[0] !== "warm") await new Promise((r) => setTimeout(r, 60_000));`;

/** The floor program's source (bundled into `dir`); `root` is the checkout whose parts it uses. */
function _floorSource(root: string): string {
  return [
    `import { DatabaseSync } from "node:sqlite";`,
    `import { encodeNodeFrame } from "${root}proto/mod.ts";`,
    `import { createLogger } from "${root}core/log/mod.ts";`,
    `const dir = Deno.makeTempDirSync({ prefix: "bcd-bench-floor-" });`,
    `const db = new DatabaseSync(dir + "/journal.db");`,
    `db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE IF NOT EXISTS t (x)");`,
    `createLogger({ level: "info", base: { role: "floor" } }).info({ dir }, "opened");`,
    `Deno.stdout.writeSync(encodeNodeFrame({ heartbeat: { applied_generation: 1 } }));`,
    `db.close();`,
    `Deno.removeSync(dir, { recursive: true });`,
    _HOLD,
    ``,
  ].join("\n");
}

/**
 * The shipped sim's code as a script that loads all of it and runs none: its entry and the chunks the entry imports
 * statically (what a start loads before anything runs), each stripped of its `import`/`export` statements and wrapped
 * in an async function that is never called, behind the bare script's one write. Deno reads, hashes and caches those
 * bytes and V8 compiles them (or reads its code cache) as for the sim, so this row is what the sim's start pays for its
 * code's size alone. Returns the script and how many bytes of the bundle it holds.
 */
function _unrunSource(dir: string): { source: string; bytes: number } {
  const seen = new Set<string>();
  const bodies: string[] = [];
  let bytes = 0;
  const visit = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    const code = Deno.readTextFileSync(`${dir}/${name}`);
    bytes += new TextEncoder().encode(code).length;
    for (const m of code.matchAll(/(?:from|import)\s*"\.\/([^"]+)"/g)) visit(m[1]!);
    const body = code
      .replace(/import\s*\{[^}]*\}\s*from\s*"[^"]*";?/g, "")
      .replace(/import\s*\*\s*as\s*[\w$]+\s*from\s*"[^"]*";?/g, "")
      .replace(/import\s*"[^"]*";?/g, "")
      .replace(/export\s*\{[^}]*\};?/g, "");
    bodies.push(`async function _never${bodies.length}() {\n${body}\n}`);
  };
  visit("bcd-sim.js");
  const head = `Deno.stdout.writeSync(new Uint8Array([10])); ${_HOLD}`;
  return { source: [head, ...bodies, ""].join("\n"), bytes };
}

/**
 * Starts an agent's `run` (`cmd args… run --config CONFIG --gateway <stand-in>`) against a gateway stand-in that
 * answers with a Challenge; ms to its Hello, CPU and RSS then.
 */
async function _toHello(
  cmd: string,
  args: string[],
  config: string,
  env: Record<string, string>,
  cwd: string,
): Promise<Start> {
  const gw = helloServer();
  const t0 = performance.now();
  const child = new Deno.Command(cmd, {
    args: [...args, "run", "--config", config, "--gateway", gw.url],
    cwd,
    env: { BCD_LOG_LEVEL: "warn", ...env },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  // An agent that exits before its Hello (a refused start, a broken checkout) fails the bench rather than hang it.
  const early = await Promise.race([gw.hello.then(() => undefined), child.status]);
  if (early !== undefined) {
    const said = (await new Response(child.stderr).text()).trim().split("\n").at(-1) ?? "";
    await gw.shutdown();
    throw new Error(`exited ${early.code} before its Hello: ${said.slice(0, 300)}`);
  }
  const start = { ms: performance.now() - t0, cpu: _cpuMs(child.pid), rss: _rssMiB(child.pid) };
  child.kill("SIGKILL");
  await child.status;
  await child.stderr.cancel();
  await gw.shutdown();
  return start;
}

/** `deno run FLAGS <root>roles/ROLE.ts` from source. */
function _fromSource(root: string, role: string, flags: string[]): [string, string[]] {
  return [Deno.execPath(), ["run", ...flags, `${root}roles/${role}.ts`]];
}

/**
 * The shipped bundle's own Deno on its entry, with `flags`: what `dist/bcd-ROLE/bcd-ROLE run` execs (its launcher
 * adds the role's fixed flags; a test's helper socket and fake tools need `flags` of their own).
 */
export function shipped(root: string, role: string, flags: string[]): [string, string[]] {
  const dir = `${root}dist/bcd-${role}`;
  return [`${dir}/deno`, [
    "run",
    "--no-config",
    "--no-lock",
    "--node-modules-dir=manual",
    ...flags,
    `${dir}/bcd-${role}.js`,
  ]];
}

/**
 * The shipped node's first start in a fresh `DENO_DIR` after a warm-up: the launcher's `warm-cache` (the entry and
 * every chunk, `warm-cache.js`) or the role's own `warm-cache` subcommand run on the entry (its static graph only).
 */
async function _afterWarmCache(
  root: string,
  flags: string[],
  config: string,
  via: "launcher" | "subcommand",
): Promise<Start> {
  const denoDir = await Deno.makeTempDir({ prefix: "bcd-bench-deno-dir-" });
  try {
    const [cmd, args] = via === "launcher" ? [`${root}dist/bcd-node/bcd-node`, []] : shipped(root, "node", flags);
    const warm = await new Deno.Command(cmd, {
      args: [...args, "warm-cache"],
      env: { DENO_DIR: denoDir },
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!warm.success) throw new Error(`exited ${warm.code} in warm-cache: ${new TextDecoder().decode(warm.stderr)}`);
    return await _toHello(...shipped(root, "node", flags), config, { DENO_DIR: denoDir }, root);
  } finally {
    await Deno.remove(denoDir, { recursive: true });
  }
}

function _isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** Measures and prints the rows; `against` adds the sim, node and shipped rows of other checkouts. */
export async function benchStart(
  out: (line: string) => void,
  opts: { rounds?: number; against?: readonly string[] } = {},
): Promise<void> {
  const rounds = opts.rounds ?? 5;
  const roots = [ROOT, ...(opts.against ?? []).map((d) => d.endsWith("/") ? d : `${d}/`)];
  const work = await Deno.makeTempDir({ prefix: "bcd-bench-start-" });
  const bareScript = `${work}/bare.ts`;
  await Deno.writeTextFile(
    bareScript,
    `Deno.stdout.writeSync(new Uint8Array([10])); ${_HOLD}\n`,
  );
  await Deno.writeTextFile(`${work}/floor.ts`, _floorSource(ROOT));
  const bundled = await new Deno.Command(Deno.execPath(), {
    args: [
      "bundle",
      "--quiet",
      `--config=${ROOT}deno.json`,
      "--platform",
      "deno",
      "--packages",
      "bundle",
      ...BUNDLE_FLAGS,
      "-o",
      `${work}/floor.js`,
      `${work}/floor.ts`,
    ],
    cwd: work,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!bundled.success) throw new Error(`bundling the floor program: ${new TextDecoder().decode(bundled.stderr)}`);

  const shippedSim = `${ROOT}dist/bcd-sim`;
  const unrun = _isFile(`${shippedSim}/bcd-sim.js`) ? _unrunSource(shippedSim) : null;
  if (unrun !== null) await Deno.writeTextFile(`${work}/unrun.js`, unrun.source);

  const gw = await TestbedGateway.start({ heartbeatIntervalMs: 60_000 });
  const sim = await SimNode.start(gw);
  await gw.until(() => gw.nodes.get(sim.nodeId)?.session, "the sim's first session");
  await sim.stop(true);
  // The node role beside a real bcd-helper (its own flags; the helper serves its boot id and host).
  const helped = await AgentWithHelper.start(gw, { role: "node" });
  await gw.until(() => gw.nodes.get(helped.nodeId)?.session, "the node's first session");
  await helped.stopAgent();
  await gw.stop();

  const simEnv = { BCD_BOOT_ID_PATH: `${sim.dataDir}/boot_id` };
  const script = (args: string[]): Pick<(typeof rows)[number], "run" | "warm"> => ({
    run: () => _toFirstOutput(Deno.execPath(), ["run", ...args]),
    warm: () => _ranToEnd(Deno.execPath(), ["run", ...args, "warm"]),
  });
  const rows: { name: string; run: () => Promise<Start>; warm?: () => Promise<void>; xs: Start[] }[] = [
    { name: "bare deno run of an empty script", ...script([bareScript]), xs: [] },
    {
      name: "floor: node:sqlite journal + a log line + a NodeFrame, bundled",
      ...script(["--no-config", "--allow-write", "--allow-read", `${work}/floor.js`]),
      xs: [],
    },
  ];
  if (unrun !== null) {
    rows.push({
      name: `the shipped sim's code loaded, none of it run (its entry and static chunks, ${
        (unrun.bytes / 1024).toFixed(0)
      } KiB, in functions never called)`,
      ...script(["--no-config", `${work}/unrun.js`]),
      xs: [],
    });
  }
  for (const root of roots) {
    const tag = root === ROOT ? "" : ` [against ${root}]`;
    const simConfig = `${sim.dataDir}/config.toml`;
    rows.push(
      {
        name: `sim role from source${tag}`,
        run: () => _toHello(..._fromSource(root, "sim", roleFlags("sim")), simConfig, simEnv, root),
        xs: [],
      },
      {
        name: `node role from source, beside bcd-helper${tag}`,
        run: () => _toHello(..._fromSource(root, "node", helped.agentFlags()), helped.config, {}, root),
        xs: [],
      },
    );
    if (_isFile(`${root}dist/bcd-sim/bcd-sim`)) {
      rows.push({
        name: `sim role as shipped (dist/bcd-sim, make bundle)${tag}`,
        run: () => _toHello(`${root}dist/bcd-sim/bcd-sim`, [], simConfig, simEnv, root),
        xs: [],
      });
    } else {
      out(`  (${root}dist/bcd-sim/bcd-sim is absent: run make bundle there to measure the shipped sim)`);
    }
    if (_isFile(`${root}dist/bcd-node/bcd-node.js`)) {
      rows.push({
        name: `node role as shipped (dist/bcd-node's deno and bundle), beside bcd-helper${tag}`,
        run: () => _toHello(...shipped(root, "node", helped.agentFlags()), helped.config, {}, root),
        xs: [],
      });
      if (root === ROOT) {
        rows.push(...(["subcommand", "launcher"] as const).map((via) => ({
          name: `node role as shipped, first start in a fresh DENO_DIR after ${
            via === "launcher" ? "bcd-node warm-cache (every chunk)" : "the entry's warm-cache (static graph)"
          }`,
          run: () => _afterWarmCache(root, helped.agentFlags(), helped.config, via),
          xs: [],
        })));
        // What warm-cache saves (runtimes/daemon/code_cache.ts): the same start with a DENO_DIR of its own each time.
        rows.push({
          name: "node role as shipped, cold: an empty DENO_DIR each start (no V8 code cache)",
          run: async () => {
            const denoDir = await Deno.makeTempDir({ dir: work, prefix: "deno-dir-" });
            try {
              return await _toHello(...shipped(root, "node", helped.agentFlags()), helped.config, {
                DENO_DIR: denoDir,
              }, root);
            } finally {
              await Deno.remove(denoDir, { recursive: true });
            }
          },
          xs: [],
        });
      }
    }
  }
  try {
    // Once each first: caches (emit, V8 code cache) are warm for every row (the anchors' scripts run to their end,
    // see _HOLD). A row whose agent does not start (an
    // --against checkout that cannot read this checkout's test config, say) is left out, with its reason.
    for (const r of [...rows]) {
      try {
        await (r.warm ?? r.run)();
      } catch (e) {
        if (!(e instanceof Error && e.message.startsWith("exited "))) throw e;
        out(`  ${r.name}: not measured (${e.message})`);
        rows.splice(rows.indexOf(r), 1);
      }
    }
    for (let i = 0; i < rounds; i++) for (const r of rows) r.xs.push(await r.run());
  } finally {
    await helped.stop();
    await Deno.remove(sim.dataDir, { recursive: true });
    await Deno.remove(work, { recursive: true });
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const of = (r: (typeof rows)[number]) => ({
    ms: med(r.xs.map((x) => x.ms)),
    cpu: med(r.xs.map((x) => x.cpu)),
    rss: med(r.xs.map((x) => x.rss)),
  });
  const bare = of(rows[0]!);
  out(`start to first Hello (own permission flags, journaled data dir), median of ${rounds} interleaved rounds:`);
  for (const r of rows) {
    const s = of(r);
    out(
      `  ${r.name}: ${s.ms.toFixed(0)} ms (${(s.ms / bare.ms).toFixed(2)}× bare), CPU ${s.cpu.toFixed(0)} ms (${
        (s.cpu / bare.cpu).toFixed(2)
      }× bare), RSS ${s.rss.toFixed(1)} MiB`,
    );
  }
  out(`  goals: ≤ 2× bare and ≤ 64 MiB`);
  out(`load average: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { against: { type: "string", multiple: true }, rounds: { type: "string" } },
  });
  await benchStart((s) => Deno.stdout.writeSync(new TextEncoder().encode(s + "\n")), {
    ...(values.rounds ? { rounds: Number(values.rounds) } : {}),
    ...(values.against ? { against: values.against } : {}),
  });
}
