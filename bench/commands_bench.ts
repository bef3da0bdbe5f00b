/**
 * `deno task bench:commands`: accept → `ACKED` latency (p50, p99) and throughput with 8 control-lane commands in
 * flight, through the real dispatcher, journal (SQLite, WAL, the journal's own fdatasync of it after each group commit)
 * and signature check, each figure set against the raw fsync latency of the same disk measured in the same run.
 *
 * The machine this runs on is shared, and its fsync latency moves by 10× within a minute, so the anchor is measured
 * in every round, right before that round's commands, and each ratio is taken per round; the figures printed are
 * medians over rounds.
 *
 * Each client of 8 keeps one `inventory.refresh` in flight: it delivers a signed protobuf `Command` (decoded as the
 * session decodes it), notes when `ACKED` arrives (the `accepted` entry is durable), waits for the terminal result,
 * and delivers the next. The commands of a round are encoded and signed before it starts (that is the gateway's
 * work, not the node's); decoding them is timed. A command costs two journal writes (accepted, done; `running` is
 * journaled for self-terminating kinds only); concurrent writes share an fsync (group commit), and a group commits and
 * starts its own WAL sync while up to `MAX_SYNCS_IN_FLIGHT - 1` earlier ones are still in flight (overlapping syncs).
 *
 * Goals (issue 24): `ACKED` p50 ≤ 2× one fsync p50; settled commands/s ≥ 3× the serial fsync rate. Beside them, the
 * process CPU per settled command: on a shared 2-core host the latency figures move with the other tenants' load,
 * while the CPU a command costs does not, so it is the figure that shows a change in our own work; and the SQL
 * statements the journal runs per settled command, which no load moves at all (11.8 before issue 24's second stop,
 * 3.8 after it: `INSERT … ON CONFLICT DO NOTHING` for accept, `UPDATE … RETURNING` for finish, no savepoint for
 * those one-write operations, the backlog read only after it changed).
 *
 * The same rounds also go through the session's frame handling (`commands_session.ts`): the node agent takes frames one
 * at a time, as the session client hands them over, which is the path a command takes in production; it prints the
 * ACKED and rate ratios there and the group commits per settled command (0.25 when 8 commands' two writes share every
 * commit; overlapping syncs trade larger groups for less waiting, so more is not worse by itself).
 *
 * Then where the time goes and what bounds it (`commands_stages.ts`): the event loop's own CPU per settled command
 * and its wait for a core (the host's load); its context switches per settled command (each costs the loop ~100-200
 * µs of CPU on this project's paravirtualised hosts, so its CPU per command moves with how often it sleeps and is
 * preempted, not only with the work it does); each stage's event-loop CPU measured alone in the same run; and the
 * bound the disk sets: each durable write waits for at least one whole WAL sync that started after its commit,
 * overlapping syncs or not, so each of the 8 clients settles at most one command per two WAL sync latencies: at most 4
 * commands per WAL sync latency in all, 4 × (raw fsync ÷ WAL group sync) times the serial fsync rate, whatever the
 * CPU. The WAL sync is timed alone there; syncs in flight together each take longer, so the bound is an upper one.
 * The clients also move in lockstep (a group's commands arrive together after the group before settled, so each
 * commit holds ~8 of them), and then the CPU bounds the rate too: a cycle is 8 commands' event-loop CPU c, a sync s,
 * the CPU again and a sync, at most 8 / (8c/f + 2s/f) times the serial fsync rate (f the fsync p50); the bench prints
 * that bound from its own c, s and f beside the measured rate, and the c that 3x would need.
 *
 * Which WAL: a new journal's WAL grows with every commit until SQLite's first checkpoint (1000 frames, about 180
 * group commits of ~5.5 frames here), and a sync after a write that extended the file makes ext4 commit its own
 * journal too (the size, the blocks); after that checkpoint SQLite restarts the WAL over the same file, kept at its
 * largest size, and every later sync follows frames overwritten in place. Measured on this host (2026-12-02, one run,
 * load 4.4): the floor's WAL sync was 0.99-2.8x the raw fsync on a new WAL across runs and 0.84x in place. A running
 * journal is in place after its first ~700 commands, so every journal measured here is first run past its first WAL
 * restart (`warmPastWalRestart`), and the floor is measured both ways. The growth phase after each start is not
 * avoided in production: filling the WAL ahead of SQLite at open (4.2 MB of zeros and a sync) cost 75-87 ms of wall
 * time at open here, on every start's path.
 *
 * `BCD_BENCH_VERIFIER=alternate` runs the direct rounds with WebCrypto and the Ed25519 thread in turn and prints
 * both, with the thread's mean difference per pair of rounds; `alternate-sync` the same with `node:crypto`'s verify on
 * the event loop (`ed25519_sync.ts`) instead of the thread (`webcrypto`, production's default, `thread` or `sync`
 * runs all rounds with one).
 *
 * Runs under `--allow-all` because Deno reads `/proc/thread-self/schedstat` (the event loop's CPU in ns) only then;
 * without it the figure falls back to the kernel's 10 ms tick.
 *
 * @module
 */
import process from "node:process";
import { Journal, MAX_SYNCS_IN_FLIGHT, openNodeSqlite, type SqlDriver, type SqlValue } from "../core/journal/mod.ts";
import { signEnvelope } from "../core/pki/envelope.ts";
import { makeTestPki } from "../core/pki/pki_testing.ts";
import { bcd, decodeMessage, encodeMessage, packPayload } from "../proto/mod.ts";
import { incomingFromWire } from "../core/commands/wire.ts";
import { Dispatcher } from "../core/commands/dispatcher.ts";
import { HandlerRegistry } from "../core/commands/handlers.ts";
import type { CommandUpdate } from "../core/commands/results.ts";
import {
  acceptAndFinish,
  type FloorRound,
  sqlFloor,
  stageCosts,
  threadClock,
  threadSwitches,
  warmPastWalRestart,
} from "./commands_stages.ts";
import { ed25519ThreadStats, verifyEd25519Batched } from "../core/pki/ed25519_thread.ts";
import { verifyEd25519 } from "../core/pki/ed25519.ts";
import { verifyEd25519Sync } from "../core/pki/ed25519_sync.ts";
import { SessionBench } from "./commands_session.ts";
import type { AcceptanceContext } from "../core/commands/acceptance.ts";

const DIR = Deno.env.get("BCD_BENCH_DIR") ?? "/var/tmp";
const ROUNDS = Number(Deno.env.get("BCD_BENCH_ROUNDS") ?? 7);
const PER_ROUND = Number(Deno.env.get("BCD_BENCH_COMMANDS") ?? 160);
const IN_FLIGHT = 8;
/**
 * The direct rounds' Ed25519 verifier: `thread` (`core/pki/ed25519_thread.ts`), `webcrypto` (production's), `sync`
 * (`node:crypto` on the event loop), or `alternate` / `alternate-sync` (WebCrypto in even rounds, the thread or
 * `node:crypto` in odd ones, in this one process: the two compared under the same load, per pair of rounds).
 */
const VERIFIER = Deno.env.get("BCD_BENCH_VERIFIER") ?? "webcrypto";
/** The verifier the direct rounds alternate with WebCrypto, or null when they use one. */
const ALTERNATE = VERIFIER === "alternate" ? "thread" : VERIFIER === "alternate-sync" ? "sync" : null;

/** The one verifier of the rounds when they do not alternate (and of the stages). */
function _singleVerifier(): "thread" | "webcrypto" | "sync" {
  return VERIFIER === "thread" || VERIFIER === "sync" ? VERIFIER : "webcrypto";
}
const FSYNC_SAMPLES = 60;
/** Commands per batch of the warm-up that runs each journal past its first WAL restart. */
const WARM_BATCH = 64;
/** Groups of the SQL floor per round (4 settled commands each). */
const FLOOR_GROUPS = 100;
/** Commands of the stage measurements. */
const STAGE_COMMANDS = Number(Deno.env.get("BCD_BENCH_STAGE_COMMANDS") ?? 800);

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
async function journalAccept(j: Journal, round: number): Promise<number[]> {
  const out: number[] = [];
  {
    for (let i = 0; i < 20; i++) {
      const t = performance.now();
      await j.accept(`01ALONE${round}-${i}`, { kind: "inventory.refresh", retrySafe: true, selfTerminating: false });
      out.push(performance.now() - t);
    }
  }
  return out;
}

interface Round {
  fsyncP50: number;
  fsyncP99: number;
  aloneP50: number;
  ackedP50: number;
  ackedP99: number;
  rate: number;
  /** Process CPU (user + system, every thread) per settled command, µs: what a loaded host's scheduler must find. */
  cpuUs: number;
  /** The event loop's CPU per settled command, µs. */
  loopUs: number;
  /** The event loop's wait for a core per settled command, µs: the host's load (NaN where the kernel does not say). */
  waitUs: number;
  /** The event loop's context switches per settled command: its own waits, and preemptions (the host's load). */
  voluntary: number;
  involuntary: number;
  /** The same through the session. */
  sessionVoluntary: number;
  sessionInvoluntary: number;
  /** Through the session's frame handling: ACKED p50 over fsync p50, settled rate over the serial fsync rate. */
  sessionAcked: number;
  sessionRate: number;
  sessionCommits: number;
  /** Through the session: the event loop's CPU per settled command, µs. */
  sessionLoopUs: number;
  /** The SQL floor's settled rate over this round's serial fsync rate. */
  floor: number;
  /** The floor's WAL sync p50 over this round's raw fsync p50. */
  floorSync: number;
  /** The floor's SQL alone, event-loop CPU per command, µs; and the loop's CPU per WAL sync round trip, µs. */
  floorSqlUs: number;
  floorSyncUs: number;
  /** The floor on a WAL overwritten in place: settled rate and WAL sync p50 over this round's anchor. */
  floorInPlace: number;
  floorSyncInPlace: number;
  /** WAL frames each floor group appended: on the new WAL, and on the one restarted in place (0 when in place). */
  floorFrames: number;
  floorFramesInPlace: number;
  /** The direct rounds' Ed25519 verifier. */
  verifier: "thread" | "webcrypto" | "sync";
}

async function main(): Promise<void> {
  const dir = await Deno.makeTempDir({ dir: DIR, prefix: "bcd-bench-commands-" });
  try {
    const alone = await Journal.open({ dataDir: `${dir}/alone`, bootId: "bench-boot" });
    // The production driver, counting the statements the journal runs: a figure the host's load does not move.
    let statements = 0;
    const journal = await Journal.open({
      dataDir: `${dir}/data`,
      bootId: "bench-boot",
      driver: async (path, opts) => {
        const db = await openNodeSqlite(path, opts);
        const s = db.sync;
        const counted: SqlDriver = {
          name: db.name,
          exec: (sql) => (statements++, db.exec(sql)),
          run: (sql, args) => (statements++, db.run(sql, args)),
          all: (sql, args) => (statements++, db.all(sql, args)),
          close: () => db.close(),
          // The calls the write queue makes inline (`sql_steps.ts`), counted the same way.
          ...(s === undefined ? {} : {
            sync: {
              exec: (sql: string) => (statements++, s.exec(sql)),
              run: (sql: string, args?: readonly SqlValue[]) => (statements++, s.run(sql, args)),
              all: (sql: string, args?: readonly SqlValue[]) => (statements++, s.all(sql, args)),
            },
          }),
        };
        return counted;
      },
    });
    const pki = await makeTestPki();
    const acked = new Map<string, number>();
    const waiters = new Map<string, () => void>();
    const registry = new HandlerRegistry().register({ kind: "inventory.refresh", run: () => Promise.resolve({}) });
    const acceptance: AcceptanceContext = {
      nodeId: "bench-node",
      role: "node",
      handlers: registry,
      upgradeOnly: () => false,
      appliedGeneration: () => 0,
      serverNow: () => Date.now(),
      trustBundle: () => pki.bundle,
      unbatchedPerHour: () => 0,
      verifyEd25519: (k, sig, m) =>
        verifier === "webcrypto"
          ? verifyEd25519(k, sig, m)
          : verifier === "sync"
          ? Promise.resolve(verifyEd25519Sync(k, sig, m))
          : verifyEd25519Batched(k, sig, m),
    };
    let verifier: Round["verifier"] = _singleVerifier();
    const session = await SessionBench.open(dir, "bench-node", pki, registry);
    // Every journal measured runs past its first WAL restart first, as a journal does after its first ~1000 frames.
    const warm: number[] = [];
    for (const [j, data] of [[alone, "alone"], [journal, "data"], [session.journal, "session"]] as const) {
      let b = 0;
      warm.push(
        await warmPastWalRestart(
          `${dir}/${data}/journal.db-wal`,
          () => acceptAndFinish(j, WARM_BATCH, `01WARM${b++}-`),
        ),
      );
    }
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
      acceptance,
    });
    let n = 0;
    /** A signed wire Command, as the gateway sends it. */
    const make = async (): Promise<Uint8Array> => {
      const body = encodeMessage(bcd.v1.CommandBody, {
        id: `01BENCH${String(n++).padStart(19, "0")}`,
        node_id: "bench-node",
        kind: "inventory.refresh",
        lane: "control",
        payload: packPayload("inventory.refresh", {}),
        not_after: { seconds: Math.floor(Date.now() / 1000) + 600, nanos: 0 },
        retry_safe: true,
      });
      return encodeMessage(bcd.v1.Command, {
        body,
        signature: await signEnvelope(pki.worker, "command", body),
        attempt: 1,
      });
    };
    const rounds: Round[] = [];
    let roundStatements = 0;
    let settledCommands = 0;
    /** Signature checks and the messages they went to the Ed25519 thread in: direct rounds, session rounds. */
    const batching = { direct: { verifies: 0, batches: 0 }, session: { verifies: 0, batches: 0 } };
    const countBatches = async <T>(into: { verifies: number; batches: number }, f: () => Promise<T>): Promise<T> => {
      const b0 = ed25519ThreadStats();
      const out = await f();
      const b1 = ed25519ThreadStats();
      into.verifies += b1.verifies - b0.verifies;
      into.batches += b1.batches - b0.batches;
      return out;
    };
    for (let round = 0; round < ROUNDS; round++) {
      if (ALTERNATE !== null) verifier = round % 2 === 0 ? "webcrypto" : ALTERNATE;
      const fsyncs = await rawFsync(dir);
      const aloneMs = await journalAccept(alone, round);
      const frames: Uint8Array[] = [];
      for (let i = 0; i < PER_ROUND; i++) frames.push(await make());
      const latencies: number[] = [];
      let next = 0;
      const client = async () => {
        while (next < frames.length) {
          const cmd = incomingFromWire(decodeMessage(bcd.v1.Command, frames[next++]!)); // as the session decodes
          const done = new Promise<void>((r) => waiters.set(cmd.body.id, r));
          const t0 = performance.now();
          await d.deliver(cmd);
          const a = acked.get(cmd.body.id);
          if (a === undefined) throw new Error(`command ${cmd.body.id} was not ACKED`);
          latencies.push(a - t0);
          await done;
        }
      };
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      const loop0 = threadClock();
      const sw0 = threadSwitches();
      const s0 = statements;
      await countBatches(batching.direct, () => Promise.all(Array.from({ length: IN_FLIGHT }, client)));
      const loop1 = threadClock();
      const sw1 = threadSwitches();
      const cpu = process.cpuUsage(cpu0);
      roundStatements += statements - s0;
      settledCommands += latencies.length;
      const seconds = (performance.now() - t0) / 1000;
      const fsyncP50 = pct(fsyncs, 50);
      // The two floors in alternating order, so that neither always runs right after the rounds.
      let floor: FloorRound;
      let inPlace: FloorRound;
      if (round % 2 === 0) {
        floor = await sqlFloor(dir, FLOOR_GROUPS, round);
        inPlace = await sqlFloor(dir, FLOOR_GROUPS, round, true);
      } else {
        inPlace = await sqlFloor(dir, FLOOR_GROUPS, round, true);
        floor = await sqlFloor(dir, FLOOR_GROUPS, round);
      }
      const sessionFrames: Uint8Array[] = [];
      for (let i = 0; i < PER_ROUND; i++) sessionFrames.push(await make());
      const ssw0 = threadSwitches();
      const viaSession = await countBatches(batching.session, () => session.round(sessionFrames));
      const ssw1 = threadSwitches();
      rounds.push({
        fsyncP50: pct(fsyncs, 50),
        fsyncP99: pct(fsyncs, 99),
        aloneP50: pct(aloneMs, 50),
        ackedP50: pct(latencies, 50),
        ackedP99: pct(latencies, 99),
        rate: latencies.length / seconds,
        cpuUs: (cpu.user + cpu.system) / latencies.length,
        loopUs: (loop1.cpu - loop0.cpu) / latencies.length,
        waitUs: (loop1.wait - loop0.wait) / latencies.length,
        voluntary: (sw1.voluntary - sw0.voluntary) / latencies.length,
        involuntary: (sw1.involuntary - sw0.involuntary) / latencies.length,
        sessionVoluntary: (ssw1.voluntary - ssw0.voluntary) / PER_ROUND,
        sessionInvoluntary: (ssw1.involuntary - ssw0.involuntary) / PER_ROUND,
        sessionAcked: viaSession.ackedP50 / fsyncP50,
        sessionRate: viaSession.rate * fsyncP50 / 1000,
        sessionCommits: viaSession.commitsPerCommand,
        sessionLoopUs: viaSession.loopUs,
        floor: floor.rate * fsyncP50 / 1000,
        floorSync: floor.syncP50 / fsyncP50,
        floorSqlUs: floor.sqlLoopUs,
        floorSyncUs: floor.syncLoopUs,
        floorInPlace: inPlace.rate * fsyncP50 / 1000,
        floorSyncInPlace: inPlace.syncP50 / fsyncP50,
        floorFrames: floor.framesAppended,
        floorFramesInPlace: inPlace.framesAppended,
        verifier,
      });
    }
    verifier = _singleVerifier(); // the stages below check with the rounds' one
    const stats = { ...journal.stats };
    const walStats = { ...journal.walStats };
    const stageFrames: Uint8Array[] = [];
    for (let i = 0; i < STAGE_COMMANDS; i++) stageFrames.push(await make());
    const stages = await stageCosts(dir, pki, acceptance, stageFrames);
    await d.stop();
    await session.close();
    await journal.close();
    await alone.close();

    const med = (f: (r: Round) => number) => pct(rounds.map(f), 50);
    const r = (x: number) => x.toFixed(2);
    const fsyncRate = med((x) => 1000 / x.fsyncP50);
    const load = Deno.loadavg().map((x) => x.toFixed(2)).join(" ");
    console.log(
      `bench:commands  dir=${DIR}  ${ROUNDS} rounds of ${PER_ROUND} commands, ${IN_FLIGHT} in flight (control lane); ` +
        `medians over rounds, ratios per round; load average ${load}`,
    );
    console.log(
      `journals warmed past their first WAL restart (${warm.map((b) => b * WARM_BATCH).join(", ")} commands: alone, ` +
        `direct, session), as a running journal's: their syncs overwrite the WAL in place (a new journal's grow it ` +
        `until its first checkpoint, the floor's new-WAL figures below)`,
    );
    console.log(
      `raw fsync (4 KiB write + fsync, ${FSYNC_SAMPLES} per round): p50 ${r(med((x) => x.fsyncP50))} ms  ` +
        `p99 ${r(med((x) => x.fsyncP99))} ms (anchor)`,
    );
    console.log(
      `journal accept alone (sequential, 20 per round): p50 ${r(med((x) => x.aloneP50))} ms ` +
        `(${r(med((x) => x.aloneP50 / x.fsyncP50))}x fsync p50)`,
    );
    console.log(
      `accept -> ACKED: p50 ${r(med((x) => x.ackedP50))} ms (${r(med((x) => x.ackedP50 / x.fsyncP50))}x fsync p50, ` +
        `goal ≤ 2x)  p99 ${r(med((x) => x.ackedP99))} ms (${r(med((x) => x.ackedP99 / x.fsyncP99))}x fsync p99)`,
    );
    console.log(
      `throughput: ${med((x) => x.rate).toFixed(0)} commands/s settled (2 journal writes each) = ` +
        `${r(med((x) => x.rate * x.fsyncP50 / 1000))}x the serial fsync rate (${fsyncRate.toFixed(0)}/s; goal ≥ 3x)`,
    );
    console.log(
      `through the session (frames taken one at a time by the node agent, as in production): accept -> ACKED p50 ` +
        `${r(med((x) => x.sessionAcked))}x fsync p50; ${r(med((x) => x.sessionRate))}x the serial fsync rate; ` +
        `${r(med((x) => x.sessionCommits))} group commits per settled command (1 when each accepted syncs alone)`,
    );
    console.log(`CPU per settled command (user + system, all threads): ${med((x) => x.cpuUs).toFixed(0)} µs`);
    console.log(
      `event-loop CPU per settled command through the session (frames decoded and encoded as the session client ` +
        `does; no WebSocket): ${med((x) => x.sessionLoopUs).toFixed(0)} µs`,
    );
    console.log(
      `event-loop CPU per settled command: ${med((x) => x.loopUs).toFixed(0)} µs (what the rate is bound by: one ` +
        `thread runs every dispatch, statement and commit); its wait for a core: ${
          med((x) => x.waitUs).toFixed(0)
        } µs ` +
        `(the host's load)`,
    );
    console.log(
      `the event loop's context switches per settled command: ${r(med((x) => x.voluntary))} voluntary (its own ` +
        `waits: syncs, pool threads), ${r(med((x) => x.involuntary))} involuntary (preempted: the host's load); ` +
        `through the session ${r(med((x) => x.sessionVoluntary))} and ${r(med((x) => x.sessionInvoluntary))}. On ` +
        `this paravirtualised host each costs the loop ~100-200 µs of CPU on its way back (threadSwitches)`,
    );
    if (ALTERNATE !== null) _compareVerifiers(rounds, ALTERNATE);
    const perBatch = (b: { verifies: number; batches: number }) =>
      b.batches === 0 ? "none (WebCrypto checked them)" : r(b.verifies / b.batches);
    console.log(
      `signature checks per message to the Ed25519 thread: ${perBatch(batching.direct)} direct, ` +
        `${perBatch(batching.session)} through the session`,
    );
    console.log(`where the event loop's time goes, each stage measured alone (${STAGE_COMMANDS} commands), µs:`);
    for (const st of stages) {
      console.log(`  ${st.name.padEnd(52)} ${st.loop.toFixed(0).padStart(5)}  (all threads ${st.all.toFixed(0)})`);
    }
    console.log(
      `bound: 8 in flight with two durable writes each, each write waiting for a whole WAL sync started after its ` +
        `commit (overlapping or not), settle at most 4 commands per WAL sync latency, and a group's WAL ` +
        `sync alone is ${r(med((x) => x.floorSync))}x a raw 4 KiB fsync here: at most ` +
        `${r(med((x) => 4 / x.floorSync))}x the serial fsync rate with no CPU at all; the floor loop (only the SQL, ` +
        `${FLOOR_GROUPS} groups of 4 INSERT + 4 UPDATE … RETURNING, one COMMIT and one WAL fdatasync each, one after ` +
        `another) settles ${r(med((x) => x.floor))}x`,
    );
    console.log(
      `the WAL in place: the same floor on a WAL restarted over earlier frames (as a running journal's is after its ` +
        `first checkpoint; ${r(med((x) => x.floorFramesInPlace))} frames appended per group, against ` +
        `${r(med((x) => x.floorFrames))} on the new WAL): its sync ${r(med((x) => x.floorSyncInPlace))}x the raw ` +
        `fsync, bound ${r(med((x) => 4 / x.floorSyncInPlace))}x; the floor loop settles ${
          r(med((x) => x.floorInPlace))
        }x`,
    );
    // In lockstep the 8 commands of a group arrive together (after the group before settled), so a cycle runs their
    // event-loop CPU, then a WAL sync for the accepted, then their CPU again, then a sync for the done: 8 commands per
    // 8c + 2s, whatever the overlap allowed (no other command is ready to use the core while a sync is in flight).
    const lockstep = (x: Round) => 8 / ((8 * x.loopUs) / 1000 / x.fsyncP50 + 2 * x.floorSyncInPlace);
    const cpuFor3x = (x: Round) => (1000 * x.fsyncP50 * (8 / 3 - 2 * x.floorSyncInPlace)) / 8;
    const need = med(cpuFor3x);
    console.log(
      `in lockstep (the 8 clients move together: ${r(stats.ops / stats.commits)} journal calls per commit, below), a ` +
        `cycle is 8 commands' event-loop CPU c and one WAL sync s, twice (accepted, then done): at most 8 / (8c/f + ` +
        `2s/f) = ${r(med(lockstep))}x the serial fsync rate with this run's c, s (in place) and f, against ` +
        `${r(med((x) => x.rate * x.fsyncP50 / 1000))}x measured; 3x would need c ≤ ${
          need > 0 ? `${need.toFixed(0)} µs` : "0 µs (not reachable: two syncs alone take longer)"
        } with this disk in lockstep, or the clients out of step with the CPU under the syncs`,
    );
    console.log(
      `the direct rounds' journal: ${walStats.grown} of its ${walStats.syncs} WAL syncs found the WAL grown ` +
        `(${r(walStats.grownBytes / Math.max(1, walStats.grown) / 4120)} frames each), warm-up included`,
    );
    console.log(
      `the journal's floor on the event loop: its SQL alone ${med((x) => x.floorSqlUs).toFixed(0)} µs per command ` +
        `(the floor loop's statements and COMMIT, no sync); each WAL sync round trip (the hand-off to Deno's blocking ` +
        `pool and the wake-up when it returns) ${med((x) => x.floorSyncUs).toFixed(0)} µs, ` +
        `${(med((x) => x.floorSyncUs) / 4).toFixed(0)} µs per command at 4 commands per sync`,
    );
    console.log(
      `SQL statements per settled command (journal, including its share of BEGIN/COMMIT): ` +
        `${r(roundStatements / settledCommands)}`,
    );
    console.log(
      `group commit: ${stats.ops} journal calls in ${stats.commits} commits (${r(stats.ops / stats.commits)} per ` +
        `commit, largest ${stats.maxGroup}); ${stats.syncs} WAL syncs, ${stats.overlapped} of them started while ` +
        `another was in flight (at most ${MAX_SYNCS_IN_FLIGHT} at once)`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Per verifier, the direct rounds' medians, and `other`'s mean difference from WebCrypto over pairs of rounds. */
function _compareVerifiers(rounds: readonly Round[], other: "thread" | "sync"): void {
  const figures: [string, (r: Round) => number][] = [
    ["ACKED p50 / fsync p50", (r) => r.ackedP50 / r.fsyncP50],
    ["settled / serial fsync rate", (r) => r.rate * r.fsyncP50 / 1000],
    ["event-loop CPU per settled command, µs", (r) => r.loopUs],
  ];
  const web = rounds.filter((r) => r.verifier === "webcrypto");
  const thread = rounds.filter((r) => r.verifier === other);
  const pairs = Math.min(web.length, thread.length);
  console.log(`verifiers alternated over ${rounds.length} direct rounds (${pairs} pairs):`);
  for (const [name, f] of figures) {
    const d = Array.from({ length: pairs }, (_, i) => f(thread[i]!) - f(web[i]!));
    const mean = d.reduce((a, b) => a + b, 0) / pairs;
    const se = Math.sqrt(d.reduce((a, b) => a + (b - mean) ** 2, 0) / (pairs - 1) / pairs);
    console.log(
      `  ${name.padEnd(40)} WebCrypto ${pct(web.map(f), 50).toFixed(2)}, ${other} ${
        pct(thread.map(f), 50).toFixed(2)
      }; ` +
        `${other} - WebCrypto per pair ${mean.toFixed(2)} ± ${se.toFixed(2)} (standard error)`,
    );
  }
}

if (import.meta.main) await main();
