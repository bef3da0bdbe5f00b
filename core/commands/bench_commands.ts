/**
 * `deno task bench:commands`: accept → `ACKED` latency (p50, p99) and throughput with 8 control-lane commands in
 * flight, through the real dispatcher, journal (SQLite, WAL + synchronous=FULL) and signature check, each figure set
 * against the raw fsync latency of the same disk measured in the same run.
 *
 * Each client of 8 keeps one `inventory.refresh` in flight: it delivers a signed protobuf `Command` (decoded as the
 * session decodes it), notes when `ACKED` arrives
 * (the `accepted` entry is durable), waits for the terminal result, and delivers the next. A command costs two
 * journal writes (accepted, done; `running` is journaled for self-terminating kinds only); concurrent writes share an fsync (group commit).
 *
 * @module
 */
import { Journal } from "../journal/mod.ts";
import { signEnvelope } from "../pki/envelope.ts";
import { makeTestPki } from "../pki/test_pki.ts";
import { bcd, decodeMessage, encodeMessage, packPayload } from "../../proto/mod.ts";
import type { IncomingCommand } from "./command.ts";
import { incomingFromWire } from "./wire.ts";
import { Dispatcher } from "./dispatcher.ts";
import { HandlerRegistry } from "./handlers.ts";
import type { CommandUpdate } from "./results.ts";

const DIR = Deno.env.get("BCD_BENCH_DIR") ?? "/var/tmp";
const COMMANDS = Number(Deno.env.get("BCD_BENCH_COMMANDS") ?? 480);
const IN_FLIGHT = 8;
const FSYNC_SAMPLES = 300;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function rawFsync(dir: string): Promise<number[]> {
  const f = await Deno.open(`${dir}/fsync.bin`, { write: true, create: true, truncate: true });
  const block = new Uint8Array(4096).fill(7);
  const out: number[] = [];
  try {
    for (let i = 0; i < FSYNC_SAMPLES; i++) {
      await f.write(block);
      const t = performance.now();
      await f.sync();
      out.push(performance.now() - t);
    }
  } finally {
    f.close();
  }
  return out;
}

/** A journal `accept` alone, one at a time: the floor an `ACKED` cannot beat. */
async function journalAccept(dir: string): Promise<number[]> {
  const j = await Journal.open({ dataDir: dir, bootId: "bench-boot" });
  const out: number[] = [];
  try {
    for (let i = 0; i < 100; i++) {
      const t = performance.now();
      await j.accept(`01ALONE${i}`, { kind: "inventory.refresh", retrySafe: true, selfTerminating: false });
      out.push(performance.now() - t);
    }
  } finally {
    await j.close();
  }
  return out;
}

async function main(): Promise<void> {
  const dir = await Deno.makeTempDir({ dir: DIR, prefix: "bcd-bench-commands-" });
  try {
    const fsyncs = await rawFsync(dir);
    const alone = await journalAccept(`${dir}/alone`);
    const journal = await Journal.open({ dataDir: `${dir}/data`, bootId: "bench-boot" });
    const pki = await makeTestPki();
    const acked = new Map<string, number>();
    const waiters = new Map<string, () => void>();
    const registry = new HandlerRegistry().register({ kind: "inventory.refresh", run: () => Promise.resolve({}) });
    const d = new Dispatcher({
      journal,
      bootId: "bench-boot",
      sink: {
        send(u: CommandUpdate) {
          if (u.state === "ACKED") acked.set(u.commandId, performance.now());
          else if (u.state !== "RUNNING") waiters.get(u.commandId)?.();
        },
      },
      specs: { requestSpec: () => {} },
      acceptance: {
        nodeId: "bench-node",
        role: "node",
        handlers: registry,
        upgradeOnly: () => false,
        appliedGeneration: () => 0,
        serverNow: () => Date.now(),
        trustBundle: () => pki.bundle,
        unbatchedPerHour: () => 0,
      },
    });
    let n = 0;
    /** A signed wire Command (what the gateway sends), decoded as the session does. */
    const make = async (): Promise<IncomingCommand> => {
      const body = encodeMessage(bcd.v1.CommandBody, {
        id: `01BENCH${String(n++).padStart(19, "0")}`,
        node_id: "bench-node",
        kind: "inventory.refresh",
        lane: "control",
        payload: packPayload("inventory.refresh", {}),
        not_after: { seconds: Math.floor(Date.now() / 1000) + 60, nanos: 0 },
        retry_safe: true,
      });
      const frame = encodeMessage(bcd.v1.Command, {
        body,
        signature: await signEnvelope(pki.worker, "command", body),
        attempt: 1,
      });
      return incomingFromWire(decodeMessage(bcd.v1.Command, frame));
    };
    const latencies: number[] = [];
    let issued = 0;
    const client = async () => {
      while (issued < COMMANDS) {
        issued++;
        const cmd = await make();
        const done = new Promise<void>((r) => waiters.set(cmd.body.id, r));
        const t0 = performance.now(); // after encoding and signing (the gateway's side), before the daemon sees it
        await d.deliver(cmd);
        const a = acked.get(cmd.body.id);
        if (a === undefined) throw new Error(`command ${cmd.body.id} was not ACKED`);
        latencies.push(a - t0);
        await done;
      }
    };
    const t0 = performance.now();
    await Promise.all(Array.from({ length: IN_FLIGHT }, client));
    const seconds = (performance.now() - t0) / 1000;
    await d.stop();
    await journal.close();

    const f50 = pct(fsyncs, 50);
    const f99 = pct(fsyncs, 99);
    const a50 = pct(latencies, 50);
    const a99 = pct(latencies, 99);
    const rate = latencies.length / seconds;
    const fsyncRate = 1000 / f50;
    const r = (x: number) => x.toFixed(2);
    console.log(`bench:commands  dir=${DIR}  commands=${latencies.length}  in flight=${IN_FLIGHT} (control lane)`);
    console.log(`raw fsync (4 KiB write + fsync, ${FSYNC_SAMPLES} samples): p50 ${r(f50)} ms  p99 ${r(f99)} ms`);
    console.log(
      `journal accept alone (sequential, 100): p50 ${r(pct(alone, 50))} ms (${r(pct(alone, 50) / f50)}x fsync p50)  ` +
        `p99 ${r(pct(alone, 99))} ms`,
    );
    console.log(
      `accept -> ACKED: p50 ${r(a50)} ms (${r(a50 / f50)}x fsync p50)  p99 ${r(a99)} ms (${r(a99 / f99)}x fsync p99)`,
    );
    console.log(
      `throughput: ${rate.toFixed(0)} commands/s settled (2 journal writes each) = ${r(rate / fsyncRate)}x ` +
        `the serial fsync rate (${fsyncRate.toFixed(0)}/s)`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) await main();
