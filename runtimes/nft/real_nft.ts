/**
 * The real `nft`: renders the policy against the host's addresses on the bridges it names, loads the text with one
 * `nft -f -` (a single kernel transaction: all three tables or none), and lists each table with
 * `nft -j list table <family> <name>`. Runs as root, in the helper; tests run it inside a network namespace they
 * created (`netns`, through `ip netns exec`), never against the host's own ruleset.
 *
 * @module
 */
import {
  countsOfNftJson,
  type NetPolicy,
  type Nft,
  NFT_TABLES,
  NftFailed,
  renderRuleset,
  type RuleCounts,
  type TableCounts,
} from "../../core/netpolicy/mod.ts";
import { type HostAddressSource, interfaceAddresses } from "./host_addresses.ts";

/** The most bytes read from one `nft` run (a listing of 1,000 instances with two NICs is well under 2 MiB). */
export const MAX_NFT_OUTPUT = 64 * 1024 * 1024;
/** How long one `nft` run may take. */
export const NFT_TIMEOUT_MS = 60_000;

/** What one run gave. */
export interface NftRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options of {@link RealNft}. */
export interface RealNftOptions {
  /** The binary (default `nft`, found on `PATH`). */
  readonly binary?: string;
  /** Run inside this network namespace (`ip netns exec <netns> nft …`); tests only. */
  readonly netns?: string;
  /** The host's own addresses on the named bridges (default: the process's interfaces). */
  readonly hostAddresses?: HostAddressSource;
}

async function _drain(s: ReadableStream<Uint8Array>, what: string): Promise<string> {
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const c of s) {
    n += c.length;
    if (n > MAX_NFT_OUTPUT) throw new NftFailed(`nft wrote more than ${MAX_NFT_OUTPUT} bytes on ${what}`);
    parts.push(c);
  }
  const all = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    all.set(p, o);
    o += p.length;
  }
  return new TextDecoder().decode(all);
}

/** The kernel's tables through the `nft` binary. */
export class RealNft implements Nft {
  readonly #o: RealNftOptions;

  constructor(opts: RealNftOptions = {}) {
    this.#o = opts;
  }

  /** Runs nft with `args`, feeding `stdin` when given. */
  async run(args: readonly string[], stdin?: string): Promise<NftRun> {
    const bin = this.#o.binary ?? "nft";
    const [cmd, argv] = this.#o.netns === undefined
      ? [bin, [...args]]
      : ["ip", ["netns", "exec", this.#o.netns, bin, ...args]];
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(cmd, {
        args: argv,
        stdin: stdin === undefined ? "null" : "piped",
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(NFT_TIMEOUT_MS),
      }).spawn();
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) throw new NftFailed(`${cmd} is not installed`, { cause: e });
      throw e;
    }
    const feed = stdin === undefined ? Promise.resolve() : (async () => {
      const w = child.stdin.getWriter();
      await w.write(new TextEncoder().encode(stdin));
      await w.close();
    })();
    const [, stdout, stderr, status] = await Promise.all([
      feed,
      _drain(child.stdout, "stdout"),
      _drain(child.stderr, "stderr"),
      child.status,
    ]);
    return { code: status.code, stdout, stderr };
  }

  async apply(policy: NetPolicy): Promise<RuleCounts> {
    const bridges = [...new Set(policy.nics.map((n) => n.bridge))];
    const host = await (this.#o.hostAddresses ?? interfaceAddresses)(bridges);
    const { text, expect } = renderRuleset(policy, host);
    const r = await this.run(["-f", "-"], text);
    if (r.code !== 0) {
      throw new NftFailed(`nft -f refused the ruleset (exit ${r.code}): ${r.stderr.trim().slice(0, 2000)}`);
    }
    return expect;
  }

  async list(): Promise<RuleCounts> {
    const out: Partial<Record<typeof NFT_TABLES[number], TableCounts>> = {};
    for (const t of NFT_TABLES) {
      const r = await this.run(["-j", "list", "table", ...t.split(" ")]);
      if (r.code !== 0) {
        // nft says "No such file or directory" for a table that is not there: it is absent, not a failure.
        if (/No such file or directory/.test(r.stderr)) continue;
        throw new NftFailed(`nft -j list table ${t} failed (exit ${r.code}): ${r.stderr.trim().slice(0, 2000)}`);
      }
      out[t] = countsOfNftJson(t, r.stdout);
    }
    return out;
  }
}
