/**
 * Test support: network namespaces a test creates and removes by name, so real `nft` and real packets never touch the
 * host's own ruleset or any address outside them. Names carry the process id and a random suffix, so tests running
 * in parallel never share one. {@link netnsUnavailable} says why a machine cannot run them (not root, no `ip` or
 * `nft`, no namespaces), for `Deno.test`'s `ignore` with the reason printed.
 *
 * @module
 */

const _dec = new TextDecoder();

/** Runs `cmd args`, throwing with its stderr when it fails. */
export async function sh(cmd: string, args: readonly string[], stdin?: string): Promise<string> {
  const child = new Deno.Command(cmd, {
    args: [...args],
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(stdin));
    await w.close();
  }
  const r = await child.output();
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (exit ${r.code}): ${_dec.decode(r.stderr)}`);
  return _dec.decode(r.stdout);
}

function _runs(cmd: string, args: string[]): boolean {
  try {
    return new Deno.Command(cmd, { args, stdin: "null", stdout: "null", stderr: "null" }).outputSync().success;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

let _probe: string | undefined | null = null;

/** Why real-nft tests cannot run here, or `undefined` when they can (probed once: a namespace is made and removed). */
export function netnsUnavailable(): string | undefined {
  if (_probe !== null) return _probe;
  if (Deno.uid() !== 0) _probe = "needs root (network namespaces and nft)";
  else if (!_runs("nft", ["--version"])) _probe = "nft is not installed (Debian nftables)";
  else if (!_runs("ip", ["-V"])) _probe = "ip is not installed (Debian iproute2)";
  else {
    const name = `bcdprobe-${Deno.pid}`;
    _probe = _runs("ip", ["netns", "add", name]) ? undefined : "ip netns add fails here (no network namespaces)";
    if (_probe === undefined) _runs("ip", ["netns", "del", name]);
  }
  if (_probe !== undefined) console.error(`real-nft tests skipped: ${_probe}`);
  return _probe;
}

/** Namespaces made by one test, removed together by name. */
export class Netns {
  readonly prefix: string;
  readonly #made: string[] = [];

  constructor(tag: string) {
    this.prefix = `bcd${tag}-${Deno.pid}-${Math.random().toString(36).slice(2, 7)}`;
  }

  /** Creates namespace `<prefix>-<name>` with loopback up; returns its full name. */
  async add(name: string): Promise<string> {
    const full = `${this.prefix}-${name}`;
    await sh("ip", ["netns", "add", full]);
    this.#made.push(full);
    await sh("ip", ["-n", full, "link", "set", "lo", "up"]);
    return full;
  }

  /** Runs `ip -n <ns> …`. */
  ip(ns: string, ...args: string[]): Promise<string> {
    return sh("ip", ["-n", ns, ...args]);
  }

  /** Runs a command inside `ns`. */
  exec(ns: string, cmd: string, args: readonly string[], stdin?: string): Promise<string> {
    return sh("ip", ["netns", "exec", ns, cmd, ...args], stdin);
  }

  /** Removes every namespace this object made (their interfaces go with them). */
  async close(): Promise<void> {
    for (const n of this.#made.splice(0)) await sh("ip", ["netns", "del", n]);
  }
}
