/**
 * Test harness of the worker's session: a worker over an in-memory stream with a fake root, the host's client
 * attached, and helpers for executions.
 *
 * @module
 */
import { defaultRootConfig, type ExecStart, type RootConfig, type Stream } from "../core/framing/mod.ts";
import { silentLogger } from "../core/log/mod.ts";
import { FramingClient } from "../runtimes/guest/framing_client.ts";
import type { ExecPeer } from "../runtimes/guest/exec_peer.ts";
import { FakeRoot, type FakeRootOptions } from "./fake_root.ts";
import { MemoryStream } from "./memory_transport.ts";
import { Worker, type WorkerOptions } from "./worker.ts";
import { type ExecIdentity, killGroup, spawnInGroup } from "./process_group.ts";

export interface Session {
  /** The process IDs (and so the process groups) of every program the worker spawned. */
  readonly pids: number[];
  readonly s: MemoryStream;
  readonly root: FakeRoot;
  readonly worker: Worker;
  readonly c: FramingClient;
  readonly run: Promise<number>;
}

/** Every process group a test's worker started: a test that fails before it stops its worker leaves none behind. */
const ALL_GROUPS: number[] = [];
globalThis.addEventListener("unload", () => {
  for (const g of ALL_GROUPS) killGroup(g);
});

/** A worker whose root is ready unless `configure` is false. */
export async function session(
  opts: { root?: FakeRootOptions; config?: RootConfig; configure?: boolean; worker?: Partial<WorkerOptions> } = {},
): Promise<Session> {
  const s = new MemoryStream();
  const root = new FakeRoot(opts.root);
  const pids: number[] = [];
  const spawn = (argv: readonly string[], stdin: boolean, identity?: ExecIdentity) => {
    const child = spawnInGroup(argv, stdin, identity);
    pids.push(child.pid);
    ALL_GROUPS.push(child.pid);
    return child;
  };
  const worker = new Worker(s.guest, { ops: root, log: silentLogger(), spawn, ...opts.worker });
  const run = worker.run();
  const c = await FramingClient.attach(s.host, { requestTimeoutMs: 10_000 });
  if (opts.configure !== false) {
    const a = await c.configureRoot(opts.config ?? defaultRootConfig());
    if (!("ready" in a)) throw new Error(`root failed: ${JSON.stringify(a)}`);
  }
  return { pids, s, root, worker, c, run };
}

/** A start with frame-counted credit and one shared output pool, as the seed's tests use. */
export function start(argv: string[], over: Partial<ExecStart> = {}): ExecStart {
  return {
    chunk: 64 * 1024,
    input: { unit: "frames", size: 4 },
    output: { unit: "frames", size: 8 },
    sharedPool: true,
    graceMs: 500,
    settlementMs: 200,
    timeoutMs: null,
    stdin: false,
    argv,
    ...over,
  };
}

/** A sink that keeps each stream's bytes. */
export function collector(): {
  sink: (s: Stream, b: Uint8Array) => void;
  bytes(s: Stream): Uint8Array;
  text(s: Stream): string;
} {
  const parts: Record<Stream, Uint8Array[]> = { 1: [], 2: [] };
  const bytes = (s: Stream) => {
    const n = parts[s].reduce((a, b) => a + b.length, 0);
    const out = new Uint8Array(n);
    let o = 0;
    for (const p of parts[s]) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  };
  return {
    sink: (s, b) => void parts[s].push(b),
    bytes,
    text: (s) => new TextDecoder().decode(bytes(s)),
  };
}

let nextId = 1n;
/** A fresh execution key. */
export function key(generation = 1n): { id: bigint; generation: bigint } {
  return { id: nextId++, generation };
}

/** Starts an execution and waits for it to start. */
export async function exec(
  c: FramingClient,
  st: ExecStart,
  sink = collector(),
): Promise<{ peer: ExecPeer; out: ReturnType<typeof collector> }> {
  const peer = await c.execute(key(), st, sink.sink);
  return { peer, out: sink };
}

/** The live processes (zombies excluded) of the process groups `pgids`. */
export async function groupMembers(pgids: readonly number[]): Promise<number[]> {
  const out = await new Deno.Command("ps", { args: ["-eo", "pid=,pgid=,stat="] }).output();
  const set = new Set(pgids);
  return new TextDecoder().decode(out.stdout).trim().split("\n").map((l) => l.trim().split(/\s+/))
    .filter((r) => set.has(Number(r[1])) && !r[2]!.startsWith("Z")).map((r) => Number(r[0]));
}
