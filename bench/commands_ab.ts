/**
 * `deno task bench:commands-ab -- DIR`: this checkout's command path against another's (a `git worktree` of the
 * base commit), both loaded into one process and run in alternating rounds, so that the host's load, which moves
 * every figure of `bench:commands` by tens of percent within a minute on a shared 2-core machine, falls on both
 * alike. Each round runs, for each checkout, the same workload as `bench:commands`:
 *
 * - the direct path: 8 closed-loop clients, each decoding a signed wire `Command` and delivering it to the
 *   dispatcher over a real journal, waiting for its result, then sending the next;
 * - the session path: the same through the node agent's frame handling (`commands_session.ts` of each checkout);
 * - the journal alone: 8 clients each doing accept then finish;
 * - a lone accept while a sync is in flight: one client keeps the journal busy with accept and finish while accepts
 *   arrive one at a time after pauses, the case of a command that arrives while another group's sync runs (with
 *   overlapping syncs it waits for one sync, its own; with one sync at a time, for the rest of the one in progress
 *   and then its own).
 *
 * Per round and path it takes the event loop's CPU per settled command (`/proc/thread-self/schedstat`: what the
 * settled rate is bound by, and far less disturbed by load than wall time) and the wall time per command (with 8 in
 * flight, the inverse of the settled rate), and on the direct path the accept → `ACKED` p50, and prints
 * each checkout's medians and the median over rounds of this checkout's figure divided by the other's in the same
 * round; the order alternates (ABBA). The other checkout's modules resolve their bare imports through this checkout's import map; it needs
 * `bench/commands_session.ts` (any version with `SessionBench.open` and `round`).
 *
 * usage: commands_ab.ts DIR [--rounds N] [--commands N]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { threadClock } from "./commands_stages.ts";

interface Side {
  readonly name: string;
  /** The direct path; resolves to its accept → `ACKED` p50, µs. */
  direct(frames: readonly Uint8Array[]): Promise<number>;
  session(frames: readonly Uint8Array[]): Promise<unknown>;
  /** The journal alone: `n` commands' accept and finish on a fresh journal; the loop CPU of those calls only. */
  journal(n: number): Promise<number>;
  /**
   * A lone call while another's sync is in flight: on a fresh journal, one client keeps accept and finish going (a
   * sync in flight most of the time) while `n` accepts come one at a time, each after a pause; their p50, µs.
   */
  lone(n: number): Promise<number>;
  close(): Promise<void>;
}

interface Figures {
  directCpu: number[];
  directWall: number[];
  directAcked: number[];
  sessionCpu: number[];
  sessionWall: number[];
  journalCpu: number[];
  lone: number[];
}

const NODE = "bench-node";
/** Lone accepts per round and side (see {@link Side.lone}). */
const LONE_CALLS = 100;

async function side(root: string, dir: string, trustBundle: unknown): Promise<Side> {
  const J = (await import(`${root}/core/journal/mod.ts`)).Journal;
  const D = (await import(`${root}/core/commands/dispatcher.ts`)).Dispatcher;
  const H = (await import(`${root}/core/commands/handlers.ts`)).HandlerRegistry;
  const W = await import(`${root}/core/commands/wire.ts`);
  const P = await import(`${root}/proto/mod.ts`);
  const S = (await import(`${root}/bench/commands_session.ts`)).SessionBench;
  const journal = await J.open({ dataDir: `${dir}/direct`, bootId: "bench-boot" });
  const waiters = new Map<string, () => void>();
  /** When each command of the direct path was delivered, until its `ACKED`. */
  const delivered = new Map<string, number>();
  const acked: number[] = [];
  const registry = new H().register({ kind: "inventory.refresh", run: () => Promise.resolve({}) });
  const d = new D({
    journal,
    bootId: "bench-boot",
    sink: {
      send(u: { state: string; commandId: string }) {
        if (u.state === "ACKED") {
          const t0 = delivered.get(u.commandId);
          if (t0 !== undefined) acked.push((performance.now() - t0) * 1000);
          delivered.delete(u.commandId);
        } else if (u.state !== "RUNNING") waiters.get(u.commandId)?.();
      },
    },
    specs: { requestSpec: () => {} },
    acceptance: {
      nodeId: NODE,
      role: "node",
      handlers: registry,
      upgradeOnly: () => false,
      appliedGeneration: () => 0,
      serverNow: () => Date.now(),
      trustBundle: () => trustBundle,
      unbatchedPerHour: () => 0,
    },
  });
  // The session bench reads only the PKI's bundle (its command-signing roots).
  const session = await S.open(`${dir}/session`, NODE, { bundle: trustBundle }, registry);
  let stage = 0;
  return {
    name: root,
    async direct(frames) {
      let next = 0;
      acked.length = 0;
      const client = async () => {
        while (next < frames.length) {
          const t0 = performance.now();
          const cmd = W.incomingFromWire(P.decodeMessage(P.bcd.v1.Command, frames[next++]!));
          delivered.set(cmd.body.id, t0);
          const done = new Promise<void>((r) => waiters.set(cmd.body.id, r));
          await d.deliver(cmd);
          await done;
        }
      };
      await Promise.all(Array.from({ length: 8 }, client));
      return median(acked);
    },
    session: (frames) => session.round(frames),
    async journal(n) {
      // Opened and closed outside the figure (open checks integrity, sets the pragmas, writes the schema).
      const j = await J.open({ dataDir: `${dir}/stage-${stage++}`, bootId: "bench-boot" });
      let next = 0;
      const client = async () => {
        while (next < n) {
          const id = `01AB${next++}`;
          await j.accept(id, { kind: "inventory.refresh", retrySafe: true, selfTerminating: false });
          await j.finish(id, { state: "SUCCEEDED" });
        }
      };
      try {
        return (await clocked(n, () => Promise.all(Array.from({ length: 8 }, client)))).cpu;
      } finally {
        await j.close();
      }
    },
    async lone(n) {
      const j = await J.open({ dataDir: `${dir}/stage-${stage++}`, bootId: "bench-boot" });
      const flags = { kind: "inventory.refresh", retrySafe: true, selfTerminating: false };
      let stop = false;
      let k = 0;
      const busy = (async () => {
        while (!stop) {
          const id = `01BZ${k++}`;
          await j.accept(id, flags);
          await j.finish(id, { state: "SUCCEEDED" });
        }
      })();
      const out: number[] = [];
      try {
        for (let i = 0; i < n; i++) {
          // Pauses spread over 0-2 ms (a WAL sync's order here), the same sequence on both sides.
          await new Promise((r) => setTimeout(r, (i * 7919) % 2000 / 1000));
          const t0 = performance.now();
          await j.accept(`01LN${i}`, flags);
          out.push((performance.now() - t0) * 1000);
        }
      } finally {
        stop = true;
        await busy;
        await j.close();
      }
      return median(out);
    },
    async close() {
      await d.stop();
      await session.close();
      await journal.close();
    },
  };
}

async function clocked<T>(per: number, f: () => Promise<T>): Promise<{ cpu: number; wall: number; value: T }> {
  const c0 = threadClock();
  const t0 = performance.now();
  const value = await f();
  const wall = (performance.now() - t0) * 1000 / per;
  return { cpu: (threadClock().cpu - c0.cpu) / per, wall, value };
}

function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    args: Deno.args[0] === "--" ? Deno.args.slice(1) : Deno.args, // `deno task … -- args` passes the "--"
    allowPositionals: true,
    options: { rounds: { type: "string", default: "8" }, commands: { type: "string", default: "800" } },
  });
  const other = positionals[0];
  if (other === undefined) {
    console.error("usage: commands_ab.ts DIR [--rounds N] [--commands N]   (DIR: a checkout of the base commit)");
    Deno.exit(2);
  }
  const rounds = Number(values.rounds);
  const n = Number(values.commands);
  const here = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
  const roots = [await Deno.realPath(other), here];
  const dir = await Deno.makeTempDir({ dir: Deno.env.get("BCD_BENCH_DIR") ?? "/var/tmp", prefix: "bcd-bench-ab-" });
  try {
    const { makeTestPki } = await import("../core/pki/pki_testing.ts");
    const { signEnvelope } = await import("../core/pki/envelope.ts");
    const { bcd, encodeMessage, packPayload } = await import("../proto/mod.ts");
    const pki = await makeTestPki();
    const sides = [await side(roots[0]!, `${dir}/a`, pki.bundle), await side(roots[1]!, `${dir}/b`, pki.bundle)];
    let id = 0;
    const frames = async (): Promise<Uint8Array[]> => {
      const out: Uint8Array[] = [];
      for (let i = 0; i < n; i++) {
        const body = encodeMessage(bcd.v1.CommandBody, {
          id: `01AB${String(id++).padStart(22, "0")}`,
          node_id: NODE,
          kind: "inventory.refresh",
          lane: "control",
          payload: packPayload("inventory.refresh", {}),
          not_after: { seconds: Math.floor(Date.now() / 1000) + 3600, nanos: 0 },
          retry_safe: true,
        });
        out.push(
          encodeMessage(bcd.v1.Command, {
            body,
            signature: await signEnvelope(pki.worker, "command", body),
            attempt: 1,
          }),
        );
      }
      return out;
    };
    const figs: Figures[] = sides.map(() => ({
      directCpu: [],
      directWall: [],
      directAcked: [],
      sessionCpu: [],
      sessionWall: [],
      journalCpu: [],
      lone: [],
    }));
    for (let round = -1; round < rounds; round++) { // round -1 warms both up
      // ABBA: each side goes first in every other round, so what one leaves behind (a checkpoint, garbage) does not
      // always fall on the same side.
      for (const k of round % 2 === 0 ? [0, 1] : [1, 0]) {
        const s = sides[k]!;
        const f1 = await frames();
        const f2 = await frames();
        const direct = await clocked(n, () => s.direct(f1));
        const session = await clocked(n, () => s.session(f2));
        const journal = await s.journal(n);
        const lone = await s.lone(LONE_CALLS);
        if (round < 0) continue;
        const f = figs[k]!;
        f.directCpu.push(direct.cpu);
        f.directWall.push(direct.wall);
        f.directAcked.push(direct.value);
        f.sessionCpu.push(session.cpu);
        f.sessionWall.push(session.wall);
        f.journalCpu.push(journal);
        f.lone.push(lone);
      }
    }
    for (const s of sides) await s.close();
    const load = Deno.loadavg().map((x) => x.toFixed(2)).join(" ");
    console.log(
      `bench:commands-ab  ${rounds} alternating rounds of ${n} commands, 8 in flight; medians; load average ${load}`,
    );
    const row = (label: string, pick: (f: Figures) => number[]) => {
      const [a, b] = [pick(figs[0]!), pick(figs[1]!)];
      const ratio = median(b.map((x, i) => x / a[i]!));
      console.log(
        `  ${label.padEnd(44)} other ${median(a).toFixed(0).padStart(5)}  this ${median(b).toFixed(0).padStart(5)}  ` +
          `this/other ${ratio.toFixed(3)}`,
      );
    };
    console.log(`other = ${roots[0]}, this = ${roots[1]}`);
    row("direct path, event-loop CPU per command, µs", (f) => f.directCpu);
    row("direct path, wall per command, µs", (f) => f.directWall);
    row("direct path, accept -> ACKED p50, µs", (f) => f.directAcked);
    row("session path, event-loop CPU per command, µs", (f) => f.sessionCpu);
    row("session path, wall per command, µs", (f) => f.sessionWall);
    row("journal alone (accept + finish), loop CPU, µs", (f) => f.journalCpu);
    row("a lone accept while a sync is in flight, p50, µs", (f) => f.lone);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  await main();
  // The verifier thread of each checkout may hold the process open (unref'd, but a late batch refs it).
  Deno.exit(0);
}
