/**
 * `bcd-sim join --nodes N` and `bcd-sim run --nodes N`: a fleet of simulated nodes in one process (`sim_fleet.ts`).
 * Without `--nodes` both are the single-node subcommands they wrap.
 *
 * - `join --nodes N --tokens-file FILE --join-url URL`: joins nodes 1..N under `<data dir>/nodes/<NNNN>/`, node i with
 *   the i-th line of FILE (one one-time token a line, as the control plane issues them); prints
 *   `{"nodes": N, "data_dir": ..., "node_ids": [...]}`.
 * - `run --nodes N`: starts nodes 1..N, waits until each holds a session (or runs offline), prints one JSON line of
 *   memory figures (below), and runs until SIGTERM or SIGINT, then stops every node cleanly.
 *
 * The memory line: `rss_base_bytes` (the process before any node), `rss_first_bytes` (with node 1 up),
 * `rss_bytes` (all N up), `rss_per_node_bytes` = (rss − base) / N, `rss_marginal_bytes` = (rss − first) / (N − 1)
 * (what one more node costs, without the one-time costs node 1 pays: SQLite's and the session code's first use),
 * and the V8 heap and external figures at the end, which tell the JavaScript heap from native memory (SQLite's page
 * caches and statements, socket buffers).
 *
 * @module
 */
import { levelFromEnv } from "../core/log/mod.ts";
import { loadIdentity } from "../core/session/identity.ts";
import { checkUrl, configAndDataDir } from "./_agent_cli.ts";
import { EXIT_OK, printOut, type Subcommand, UsageError } from "./_cli.ts";
import { eachLimited, fleetDestination, fleetNodeDir, joinFleet, SimFleet } from "./sim_fleet.ts";
import { simWiring } from "./sim_wiring.ts";

/** The most nodes one process runs. */
export const MAX_FLEET_NODES = 10_000;

/** How long `run --nodes` waits for every node's first session before it prints the figures anyway. */
export const FLEET_UP_TIMEOUT_MS = 120_000;

function _nodes(v: unknown): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > MAX_FLEET_NODES) {
    throw new UsageError(`--nodes ${JSON.stringify(v)}: a whole number from 1 to ${MAX_FLEET_NODES}`);
  }
  return n;
}

/** `join`, with `--nodes N --tokens-file FILE` for a fleet. */
export function fleetJoinCommand(single: Subcommand, defaultDataDir: string): Subcommand {
  return {
    ...single,
    summary: `${single.summary}; --nodes N --tokens-file FILE joins a fleet of N nodes under <data dir>/nodes/`,
    options: { ...single.options, nodes: { type: "string" }, "tokens-file": { type: "string" } },
    async run(args) {
      if (args.values.nodes === undefined) {
        if (args.values["tokens-file"] !== undefined) throw new UsageError("--tokens-file goes with --nodes");
        return await single.run!(args);
      }
      const n = _nodes(args.values.nodes);
      const file = args.values["tokens-file"] as string | undefined;
      const joinUrl = args.values["join-url"] as string | undefined;
      if (!file || !joinUrl) throw new UsageError("join --nodes needs --tokens-file and --join-url");
      if (args.values.token !== undefined) throw new UsageError("join --nodes takes its tokens from --tokens-file");
      checkUrl(joinUrl, "join");
      const tokens = (await Deno.readTextFile(file)).split("\n").map((l) => l.trim()).filter((l) => l !== "");
      if (tokens.length < n) throw new UsageError(`${file} holds ${tokens.length} tokens; --nodes ${n} needs ${n}`);
      const { dataDir } = await configAndDataDir(args.values, { ...simWiring(), defaultDataDir });
      const ids = await joinFleet(dataDir, tokens.slice(0, n), joinUrl);
      printOut(JSON.stringify({ nodes: n, data_dir: dataDir, node_ids: ids }));
      return EXIT_OK;
    },
  };
}

/** The memory figures `run --nodes` prints. */
export interface FleetMemory {
  readonly nodes: number;
  readonly sessions: number;
  readonly rss_base_bytes: number;
  readonly rss_first_bytes: number;
  readonly rss_bytes: number;
  readonly rss_per_node_bytes: number;
  readonly rss_marginal_bytes: number;
  readonly heap_used_bytes: number;
  readonly external_bytes: number;
}

/** Starts every node of `fleet` (node 1 first, alone) and measures memory once all hold a session. */
export async function startFleetMeasured(
  fleet: SimFleet,
  opts: { online: boolean; upTimeoutMs?: number },
): Promise<FleetMemory> {
  const base = Deno.memoryUsage().rss;
  const [first, ...rest] = fleet.nodes;
  const up = (n: typeof first) => !opts.online || (n?.agent?.session?.sessions ?? 0) > 0;
  await first!.start();
  await _until(() => up(first), opts.upTimeoutMs ?? FLEET_UP_TIMEOUT_MS);
  const one = Deno.memoryUsage().rss;
  await eachLimited(rest, 32, (n) => n.start());
  await _until(() => fleet.nodes.every(up), opts.upTimeoutMs ?? FLEET_UP_TIMEOUT_MS);
  const m = Deno.memoryUsage();
  const n = fleet.nodes.length;
  return {
    nodes: n,
    sessions: fleet.nodes.filter(up).length,
    rss_base_bytes: base,
    rss_first_bytes: one,
    rss_bytes: m.rss,
    rss_per_node_bytes: Math.round((m.rss - base) / n),
    rss_marginal_bytes: n > 1 ? Math.round((m.rss - one) / (n - 1)) : m.rss - base,
    heap_used_bytes: m.heapUsed,
    external_bytes: m.external,
  };
}

/** Polls `pred` every 50 ms until it holds or `timeoutMs` passed (the figures are printed either way). */
async function _until(pred: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred() && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
}

/** `run`, with `--nodes N` for a fleet. */
export function fleetRunCommand(single: Subcommand, defaultDataDir: string): Subcommand {
  return {
    ...single,
    summary: `${single.summary}; --nodes N runs the fleet under <data dir>/nodes/ in one process`,
    options: { ...single.options, nodes: { type: "string" } },
    async run(args) {
      if (args.values.nodes === undefined) return await single.run!(args);
      const n = _nodes(args.values.nodes);
      const { config, dataDir } = await configAndDataDir(args.values, { ...simWiring(), defaultDataDir });
      const first = fleetNodeDir(dataDir, 1);
      let gatewayUrl = args.values.offline
        ? undefined
        : (args.values.gateway as string | undefined) ?? config.gateway.url;
      if (!args.values.offline && gatewayUrl === undefined) gatewayUrl = (await loadIdentity(first))?.gatewayUrl;
      if (gatewayUrl) checkUrl(gatewayUrl, "session");
      const fleet = await SimFleet.open({
        dataDir,
        nodes: n,
        config,
        gatewayUrl,
        logLevel: levelFromEnv("warn"), // N nodes share stderr: warnings and errors unless BCD_LOG_LEVEL asks for more
        destination: fleetDestination(),
      });
      const stop = new AbortController();
      const onSignal = () => stop.abort();
      Deno.addSignalListener("SIGTERM", onSignal);
      Deno.addSignalListener("SIGINT", onSignal);
      try {
        const m = await startFleetMeasured(fleet, { online: gatewayUrl !== undefined });
        printOut(JSON.stringify(m));
        if (!stop.signal.aborted) {
          await new Promise<void>((r) => stop.signal.addEventListener("abort", () => r(), { once: true }));
        }
      } finally {
        Deno.removeSignalListener("SIGTERM", onSignal);
        Deno.removeSignalListener("SIGINT", onSignal);
        await fleet.stop();
      }
      return EXIT_OK;
    },
  };
}
