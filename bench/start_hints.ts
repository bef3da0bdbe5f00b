/**
 * `deno task start:hints`: writes `roles/start_hints.json`, the functions each daemon's start compiles
 * (`roles/eager.ts`), for the sim and the node (the roles `bench:start` measures).
 *
 * Each role is bundled without hints into a scratch directory and started once, as `bench:start` starts it (the sim
 * on its testbed config; the node beside a real `bcd-helper`), against a gateway stand-in, with V8 logging its
 * function events (`--log-function-events`); it is stopped at its first `Hello`. Every function V8 parsed lazily by
 * then in one of the bundle's modules is looked up among the module's top-level function declarations (a lazily
 * compiled function's events start at its parameter list), and its source name (`--keep-names`) is a hint. Methods
 * and nested functions are left out: they have no eager form. Run it after a change to what a start runs; a stale
 * list only costs start time (roles/eager.ts).
 *
 * @module
 */
import * as acorn from "acorn";
import { bundleRole } from "../roles/build.ts";
import { roleFlags } from "../roles/permissions.ts";
import { helloServer } from "../fixtures/start/hello_server.ts";
import { TestbedGateway } from "../fixtures/testbed/gateway.ts";
import { SimNode } from "../fixtures/testbed/sim_node.ts";
import { AgentWithHelper } from "../fixtures/testbed/node_helper.ts";
import { topLevelFunctions } from "../roles/eager.ts";
import { shipped } from "./start_bench.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const HINTS = `${ROOT}roles/start_hints.json`;

/** Script id -> URL, and script id -> the start offsets of the functions V8 parsed lazily, from a V8 log. */
function lazilyParsed(log: string): Map<string, Set<number>> {
  const urls = new Map<string, string>();
  const starts = new Map<string, Set<number>>();
  for (const line of log.split("\n")) {
    const f = line.split(",");
    if (f[0] === "script-details" && f[2]) urls.set(f[1]!, f[2]);
    if (f[0] === "function" && f[1] === "parse-function") {
      (starts.get(f[2]!) ?? starts.set(f[2]!, new Set()).get(f[2]!)!).add(Number(f[3]));
    }
  }
  const byUrl = new Map<string, Set<number>>();
  for (const [id, set] of starts) {
    const url = urls.get(id);
    if (url === undefined) continue;
    for (const s of set) (byUrl.get(url) ?? byUrl.set(url, new Set()).get(url)!).add(s);
  }
  return byUrl;
}

/** Runs the role bundled under `root` to its first Hello with V8's function events logged; the log. */
async function logToHello(
  root: string,
  role: string,
  flags: string[],
  config: string,
  env: Record<string, string>,
): Promise<string> {
  const log = `${root}v8-${role}.log`;
  const gw = helloServer();
  const [cmd, args] = shipped(root, role, [
    ...flags,
    `--v8-flags=--log-function-events,--logfile=${log},--no-logfile-per-isolate`,
  ]);
  const child = new Deno.Command(cmd, {
    args: [...args, "run", "--config", config, "--gateway", gw.url],
    env: { BCD_LOG_LEVEL: "warn", DENO_DIR: `${root}deno-dir`, ...env },
    stdout: "null",
    stderr: "piped",
  }).spawn();
  try {
    const early = await Promise.race([gw.hello.then(() => undefined), child.status]);
    if (early !== undefined) {
      const said = (await new Response(child.stderr).text()).trim().split("\n").at(-1) ?? "";
      throw new Error(`bcd-${role} exited ${early.code} before its Hello: ${said.slice(0, 300)}`);
    }
    child.kill("SIGKILL");
    await child.status;
    await child.stderr.cancel();
  } finally {
    await gw.shutdown();
  }
  return await Deno.readTextFile(log);
}

/** The source names of the top-level functions of `dir`'s modules that the log shows parsed lazily. */
async function hintsOf(dir: string, log: string): Promise<string[]> {
  const names = new Set<string>();
  for (const [url, starts] of lazilyParsed(log)) {
    if (!url.startsWith(`file://${dir}/`)) continue;
    const source = await Deno.readTextFile(new URL(url));
    const program = acorn.parse(source, { ecmaVersion: "latest", sourceType: "module" });
    for (const f of topLevelFunctions(program, source)) if (starts.has(f.params)) names.add(f.sourceName);
  }
  return [...names].sort();
}

if (import.meta.main) {
  const work = await Deno.makeTempDir({ prefix: "bcd-start-hints-" });
  const gw = await TestbedGateway.start({ heartbeatIntervalMs: 60_000 });
  let helped: AgentWithHelper | undefined;
  try {
    const sim = await SimNode.start(gw);
    await gw.until(() => gw.nodes.get(sim.nodeId)?.session, "the sim's first session");
    await sim.stop(true);
    helped = await AgentWithHelper.start(gw, { role: "node" });
    await gw.until(() => gw.nodes.get(helped!.nodeId)?.session, "the node's first session");
    await helped.stopAgent();

    const hints: Record<string, string[]> = {};
    for (const role of ["node", "sim"] as const) {
      const dir = await bundleRole(role, "start-hints", `${work}/dist`, { startHints: false });
      const log = role === "sim"
        ? await logToHello(`${work}/`, role, roleFlags("sim"), `${sim.dataDir}/config.toml`, {
          BCD_BOOT_ID_PATH: `${sim.dataDir}/boot_id`,
        })
        : await logToHello(`${work}/`, role, helped.agentFlags(), helped.config, {});
      hints[role] = await hintsOf(dir, log);
      console.log(`${role}: ${hints[role].length} top-level functions compiled before its first Hello`);
    }
    await Deno.writeTextFile(HINTS, JSON.stringify(hints, null, 2) + "\n");
    console.log(`wrote ${HINTS}`);
  } finally {
    await helped?.stop();
    await gw.stop();
    await Deno.remove(work, { recursive: true });
  }
}
