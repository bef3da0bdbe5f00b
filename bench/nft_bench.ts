/**
 * `deno task bench:nft`: loading the network policy for 1,000 instances with two NICs each (issue 13), in a network
 * namespace this benchmark makes and removes.
 *
 * Prints, interleaved over rounds, medians:
 * - anchor: `nft -f` of the same ruleset text, loaded directly (`ip netns exec <ns> nft -f -`);
 * - bcd in the helper: `RealNft.apply` (check the policy, look up the host's addresses, render, `nft -f`), with its
 *   ratio to the anchor (goal ≤ 1.2×);
 * - bcd from the node: the same through the helper's socket (`HelperNft` → `nft.apply`), with its ratio;
 * - the render alone (check + text), and the integrity check per run (three `nft -j list table` and the count);
 * - on CPU time, which a loaded machine does not inflate: `nft -f`'s own (bash `times`) against it plus what the
 *   helper spends in process (JSON parse + check + render), as a ratio: cold (every NIC new to this process, a
 *   `fleetPolicy` generation no earlier round used) and warm (the same policy again, as the integrity check's reload
 *   and a pass that changed one instance send it: the helper parses each address and renders each NIC once).
 *
 * The wall-time lines load the same policy every round, so they are warm after the first.
 *
 * @module
 */
import process from "node:process";
import { silentLogger } from "../core/log/mod.ts";
import { realClock } from "../core/clock.ts";
import { checkNetPolicy, NFT_TABLES, NftKeeper, renderRuleset } from "../core/netpolicy/mod.ts";
import { startTestHelper } from "../runtimes/helper/helper_testing.ts";
import { HelperNft } from "../runtimes/helper/nft_port.ts";
import { Netns, netnsUnavailable } from "../fixtures/nft/netns.ts";
import { RealNft } from "../runtimes/nft/real_nft.ts";
import { FLEET_HOST, fleetPolicy } from "../fixtures/nft/fleet.ts";

const ROUNDS = Math.min(15, Number(Deno.env.get("BCD_BENCH_ROUNDS") ?? "7"));
const INSTANCES = 1000;

function _median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** CPU milliseconds (user + system) this process spent in `f`. */
function _cpu(f: () => unknown): number {
  const t = process.cpuUsage();
  f();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
}

/** The CPU milliseconds the nft commands of `script` spend in `ns`, fed `text` (bash's `times` after the child). */
async function _nftCpu(ns: string, script: string, text = ""): Promise<number> {
  const child = new Deno.Command("bash", {
    args: ["-c", `ip netns exec ${ns} bash -c '${script}' && times`],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(text));
  await w.close();
  const out = new TextDecoder().decode((await child.output()).stdout).trim().split("\n");
  // The second line holds the children's user and system time: "0m0.081s 0m0.104s".
  const secs = (out[1] ?? "").split(/\s+/).map((x) => {
    const m = /^(\d+)m([\d.]+)s$/.exec(x);
    return m ? Number(m[1]) * 60 + Number(m[2]) : NaN;
  });
  return (secs[0]! + secs[1]!) * 1000;
}

async function _time(f: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

const why = netnsUnavailable();
if (why !== undefined) {
  console.log(`bench:nft cannot run here: ${why}`);
  Deno.exit(1);
}
const nets = new Netns("bn");
try {
  const ns = await nets.add("h");
  for (const [br, a] of [["br0", "10.0.0.1/24"], ["br1", "10.16.0.1/24"]]) {
    await nets.ip(ns, "link", "add", br!, "type", "bridge");
    await nets.ip(ns, "addr", "add", a!, "dev", br!);
  }
  const host = FLEET_HOST.slice(0, 2);
  const policy = fleetPolicy(INSTANCES);
  const real = new RealNft({ netns: ns, hostAddresses: () => Promise.resolve(host) });
  const helper = await startTestHelper({ nft: real });
  const viaHelper = new HelperNft(helper.client);
  const { text } = renderRuleset(policy, host);
  const direct = async () => {
    const r = await real.run(["-f", "-"], text);
    if (r.code !== 0) throw new Error(r.stderr);
  };
  const keeper = new NftKeeper(real, { clock: realClock, log: silentLogger() });
  await keeper.ensure(policy);
  const t = {
    anchor: [] as number[],
    apply: [] as number[],
    helper: [] as number[],
    render: [] as number[],
    check: [] as number[],
    cpu: [] as number[],
    cold: [] as number[],
    nftCpu: [] as number[],
    listCpu: [] as number[],
  };
  for (let i = 0; i < ROUNDS; i++) {
    t.anchor.push(await _time(direct));
    t.apply.push(await _time(() => real.apply(policy)));
    t.helper.push(await _time(() => viaHelper.apply(policy)));
    t.render.push(await _time(() => Promise.resolve(renderRuleset(policy, host))));
    // What the helper does in process for one nft.apply: parse the request, check its policy, then render it.
    const fresh = JSON.stringify(fleetPolicy(INSTANCES, i + 1)), same = JSON.stringify(policy);
    t.cold.push(_cpu(() => renderRuleset(checkNetPolicy(JSON.parse(fresh)), host)));
    t.cpu.push(_cpu(() => renderRuleset(checkNetPolicy(JSON.parse(same)), host)));
    t.nftCpu.push(await _nftCpu(ns, "nft -f -", text));
    t.listCpu.push(await _nftCpu(ns, NFT_TABLES.map((x) => `nft -j list table ${x} >/dev/null`).join(" && ")));
    t.check.push(
      await _time(async () => {
        const r = await keeper.check();
        if (r?.kind !== "intact") throw new Error(`integrity check found ${JSON.stringify(r)}`);
      }),
    );
  }
  await helper.close();
  const a = _median(t.anchor);
  const f = (ms: number) => `${ms.toFixed(1)} ms`;
  const load = (await Deno.readTextFile("/proc/loadavg")).split(" ")[0];
  console.log(`bench:nft — load average ${load} on ${navigator.hardwareConcurrency} CPUs: wall times grow with it`);
  console.log(
    `bench:nft — ${INSTANCES} instances, ${policy.nics.length} NICs, ruleset ${text.length} bytes, ${ROUNDS} rounds (medians)`,
  );
  console.log(`anchor  nft -f of the same text              ${f(a)}`);
  console.log(
    `bcd     RealNft.apply (helper side)           ${f(_median(t.apply))}  ${
      (_median(t.apply) / a).toFixed(2)
    }x  (goal <= 1.2x)`,
  );
  console.log(
    `bcd     HelperNft.apply over the socket       ${f(_median(t.helper))}  ${
      (_median(t.helper) / a).toFixed(2)
    }x  (goal <= 1.2x)`,
  );
  console.log(`        render alone (check + text)           ${f(_median(t.render))} wall`);
  const nc = _median(t.nftCpu), bc = _median(t.cpu), cc = _median(t.cold);
  console.log(
    `CPU     nft -f ${f(nc)}; the helper adds, cold (every NIC new) ${f(cc)}: ${((nc + cc) / nc).toFixed(2)}x` +
      `; warm (the same policy again) ${f(bc)}: ${((nc + bc) / nc).toFixed(2)}x  (goal <= 1.2x)`,
  );
  const lc = _median(t.listCpu);
  console.log(
    `        integrity check per run (3 listings)  ${f(_median(t.check))} wall; nft's CPU ${f(lc)}, every 5 s: ${
      (lc / 50).toFixed(1)
    }% of one core`,
  );
} finally {
  await nets.close();
}
