/**
 * The parts of `bench:commands` that say where a command's time goes and what bounds it (issue 24):
 *
 * - {@link threadClock}: the event loop's own CPU and run-queue wait (Linux `/proc/thread-self/schedstat`, ns). The
 *   event loop is the one thread every command's dispatch, journal statements and group commits share, so its CPU
 *   per settled command is what the settled rate is bound by, and on a shared host the run-queue wait says how long
 *   it waited for a core it was owed (the host's load, not our work).
 * - {@link stageCosts}: the event loop's CPU per command of each stage, each measured alone in the same run:
 *   decoding the wire `Command`, the acceptance checks (with the Ed25519 check, whose work runs on its own thread),
 *   one at a time and eight at a time, the Ed25519 check by itself each way, the dispatcher and lanes over a journal
 *   that answers at once, the journal alone (accept + finish, 8 in flight, with their group commits and syncs), and
 *   the session client's per-command work the rounds leave out (WebSocket frames, the result's log line).
 * - {@link sqlFloor}: the floor of the journal's part: only the statements a settled command needs (its `INSERT`
 *   and its `UPDATE … RETURNING`), four commands' worth per `COMMIT`, and one fdatasync of the WAL per group, in a
 *   plain loop on the journal's own schema. Its settled rate over the serial fsync rate of the same round is the
 *   most the whole path could reach on this disk with 8 commands in flight (two durable writes each, so four
 *   commands per sync at best). Run twice per round: on a new WAL, which each group's frames extend (as the rounds'
 *   fresh journals do until their first checkpoint), and on a WAL restarted over frames written before (`inPlace`:
 *   as a running journal's is after its first checkpoint, SQLite keeping the file at its largest size), where
 *   fdatasync commits no file system metadata.
 *
 * @module
 */
import process from "node:process";
import { DatabaseSync } from "node:sqlite";
import { Journal } from "../core/journal/mod.ts";
import type { TestPki } from "../core/pki/pki_testing.ts";
import { verifyEnvelope } from "../core/pki/envelope.ts";
import { verifyEd25519 } from "../core/pki/ed25519.ts";
import { verifyEd25519Sync } from "../core/pki/ed25519_sync.ts";
import { verifyEd25519Batched } from "../core/pki/ed25519_thread.ts";
import { signedMessage } from "../core/pki/purpose.ts";
import { fromBase64 } from "../core/pki/codec.ts";
import { bcd, decodeMessage, encodeNodeFrame } from "../proto/mod.ts";
import { incomingFromWire, updateToWire } from "../core/commands/wire.ts";
import { encodeWsFrame, WsOpcode } from "../core/session/ws_frame.ts";
import { jsonLogger } from "../core/log/json_logger.ts";
import { type AcceptanceContext, runAcceptanceChecks } from "../core/commands/acceptance.ts";
import { type CommandJournal, Dispatcher } from "../core/commands/dispatcher.ts";
import { HandlerRegistry } from "../core/commands/handlers.ts";
import type { CommandUpdate } from "../core/commands/results.ts";
import type { IncomingCommand } from "../core/commands/command.ts";
import { EMPTY_TRUST_BUNDLE } from "../core/pki/trust_bundle.ts";

/**
 * CPU the calling thread ran and time it waited for a core, µs: from `/proc/thread-self/schedstat` (ns; Deno reads
 * it only under `--allow-all`), else from `process.threadCpuUsage()` (the kernel's tick, 10 ms here; no wait figure).
 */
export function threadClock(): { cpu: number; wait: number } {
  try {
    const [cpu, wait] = Deno.readTextFileSync("/proc/thread-self/schedstat").trim().split(" ").map(Number);
    if (cpu !== undefined && wait !== undefined && Number.isFinite(cpu) && Number.isFinite(wait)) {
      return { cpu: cpu / 1000, wait: wait / 1000 };
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotCapable)) throw e;
  }
  const u = process.threadCpuUsage();
  return { cpu: u.user + u.system, wait: NaN };
}

/**
 * The calling thread's context switches so far (Linux `/proc/thread-self/status`): voluntary (it waited: for a sync,
 * a timer, a pool thread) and involuntary (preempted: the host's load). On this project's hosts, paravirtualised
 * guests, each switch costs the switched thread ~100-200 µs of CPU on its way back (`perf`: `pvm_irq_enable` under
 * `finish_task_switch`, 17% of an idle-waiting Deno's samples), so the event loop's CPU per command moves with how
 * often it sleeps. Zeros where the file does not say.
 */
export function threadSwitches(): { voluntary: number; involuntary: number } {
  let text: string;
  try {
    text = Deno.readTextFileSync("/proc/thread-self/status");
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotCapable) {
      return { voluntary: 0, involuntary: 0 };
    }
    throw e;
  }
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)$`, "m").exec(text)?.[1] ?? 0);
  return { voluntary: field("voluntary_ctxt_switches"), involuntary: field("nonvoluntary_ctxt_switches") };
}

/** Event-loop CPU (and all threads' CPU) of one run of `f`, divided by `per`, µs. */
async function clocked(per: number, f: () => Promise<unknown>): Promise<{ loop: number; all: number }> {
  const t0 = threadClock();
  const c0 = process.cpuUsage();
  await f();
  const c = process.cpuUsage(c0);
  const t1 = threadClock();
  const all = (c.user + c.system) / per;
  return { loop: (t1.cpu - t0.cpu) / per, all };
}

/** Event-loop CPU (and all threads' CPU) per call of `f` over `n` calls after 100 warm-up calls, µs. */
async function measure(n: number, f: (i: number) => unknown): Promise<{ loop: number; all: number }> {
  for (let i = 0; i < Math.min(n, 100); i++) await f(i); // warm up: keys imported, code optimised
  return await clocked(n, async () => {
    for (let i = 0; i < n; i++) await f(i);
  });
}

/** As {@link measure}, eight calls at a time (asked for in one turn, awaited together). */
async function measureBy8(n: number, f: (i: number) => Promise<unknown>): Promise<{ loop: number; all: number }> {
  const by8 = async (from: number, to: number) => {
    for (let i = from; i < to; i += 8) {
      await Promise.all(Array.from({ length: Math.min(8, to - i) }, (_, j) => f(i + j)));
    }
  };
  await by8(0, Math.min(n, 96));
  return await clocked(n, () => by8(0, n));
}

/** One stage's figure. */
export interface Stage {
  readonly name: string;
  /** Event-loop CPU per command, µs. */
  readonly loop: number;
  /** Every thread's CPU per command, µs. */
  readonly all: number;
}

/** The stages' costs, measured alone; `frames` are signed wire `Command`s for `ctx`'s node (consumed here). */
export async function stageCosts(
  dir: string,
  pki: TestPki,
  ctx: AcceptanceContext,
  frames: readonly Uint8Array[],
): Promise<Stage[]> {
  const n = frames.length;
  const cmds = frames.map((f) => incomingFromWire(decodeMessage(bcd.v1.Command, f)));
  const sigs = cmds.map((c) => _sig(c));
  const msgs = cmds.map((c) => signedMessage("command", c.bodyBytes));
  const key = pki.worker.key.publicKey;
  const out: Stage[] = [];
  const add = (name: string, r: { loop: number; all: number }) => out.push({ name, ...r });
  add(
    "decode (wire Command -> IncomingCommand)",
    await measure(n, (i) => incomingFromWire(decodeMessage(bcd.v1.Command, frames[i]!))),
  );
  // The signature checks one at a time (each its own message to the Ed25519 thread and wake-up), then eight at a
  // time as eight commands in flight ask for them (one message per eight).
  add("acceptance checks, one at a time", await measure(n, (i) => runAcceptanceChecks(ctx, cmds[i]!)));
  add("acceptance checks, 8 at a time", await measureBy8(n, (i) => runAcceptanceChecks(ctx, cmds[i]!)));
  const envelope = (i: number) =>
    verifyEnvelope(pki.bundle.commandSigningRoots, "command", cmds[i]!.bodyBytes, cmds[i]!.signature, ctx.serverNow());
  add("  of which the signature envelope, one at a time", await measure(n, envelope));
  add("  of which the signature envelope, 8 at a time", await measureBy8(n, envelope));
  add("  Ed25519 alone, thread, one at a time", await measure(n, (i) => verifyEd25519Batched(key, sigs[i]!, msgs[i]!)));
  add(
    "  Ed25519 alone, thread, 8 at a time",
    await measureBy8(n, (i) => verifyEd25519Batched(key, sigs[i]!, msgs[i]!)),
  );
  add("  Ed25519 alone, WebCrypto, one at a time", await measure(n, (i) => verifyEd25519(key, sigs[i]!, msgs[i]!)));
  add("  Ed25519 alone, WebCrypto, 8 at a time", await measureBy8(n, (i) => verifyEd25519(key, sigs[i]!, msgs[i]!)));
  add(
    "  Ed25519 alone, node:crypto (on the loop)",
    await measure(n, (i) => verifyEd25519Sync(key, sigs[i]!, msgs[i]!)),
  );
  add("dispatcher + lanes (journal answering at once)", await _dispatchOnly(cmds));
  add(
    `  the same once optimised (median of ${DISPATCH_RUNS} runs after ${DISPATCH_WARM_RUNS})`,
    await _dispatchOptimised(cmds),
  );
  add("client: 3 WebSocket frames + result log line", await measure(n, (i) => _clientWork(cmds[i]!)));
  add("journal: accept + finish, 8 in flight, with syncs, WAL in place", await _journalOnly(dir, n));
  return out;
}

const _nullLog = jsonLogger({ write() {} }, "info", { role: "node" });

/**
 * What production adds per command beyond the session rounds (which encode each update frame but send no WebSocket
 * frame and log nothing): the three update frames (ACKED, RUNNING, the result) masked as WebSocket frames, and the
 * result's info line formatted (its write to stderr not included).
 */
function _clientWork(c: IncomingCommand): void {
  for (const state of ["ACKED", "RUNNING", "SUCCEEDED"] as const) {
    const u: CommandUpdate = { commandId: c.body.id, kind: c.body.kind, state, bootId: "bench-boot" };
    encodeWsFrame(WsOpcode.binary, encodeNodeFrame({ command_update: updateToWire(u) }), { mask: true });
  }
  _nullLog.info({ command_id: c.body.id, kind: c.body.kind, state: "SUCCEEDED", code: undefined }, "command update");
}

function _sig(c: IncomingCommand): Uint8Array {
  const envelope = JSON.parse(new TextDecoder().decode(c.signature)) as { sig: unknown };
  return fromBase64("sig", envelope.sig, 64);
}

/**
 * The dispatcher stage's runs over the same commands (a fresh dispatcher each, so each id is new to it) before its
 * optimised cost is taken, and the runs that cost is the median of. What a first run costs depends on how far V8 has
 * optimised the code by then: in a fresh process (2026-12-03) successive runs of 800 commands cost 45.6, 8.4, 6.8,
 * 4.4, 5.3, 5.5, 21.5, 12.3, 11.5, 4.6 µs of event-loop CPU per command (the seventh a deoptimisation and its
 * recompile), and 8,000 distinct commands in slices of 1,000 fell from 26-34 µs to 5.5-7.3 µs after the fourth; after
 * this bench's rounds the first run read 37 and 11 µs in two runs, the optimised figure 7. A daemon that takes
 * commands steadily runs the optimised code; one that takes a few an hour, code nearer the first run's.
 */
const DISPATCH_WARM_RUNS = 3;
const DISPATCH_RUNS = 5;

/** {@link _dispatchOnly}'s cost once optimised: the run of median event-loop CPU among {@link DISPATCH_RUNS}. */
async function _dispatchOptimised(cmds: readonly IncomingCommand[]): Promise<{ loop: number; all: number }> {
  for (let i = 0; i < DISPATCH_WARM_RUNS; i++) await _dispatchOnly(cmds);
  const runs: { loop: number; all: number }[] = [];
  for (let i = 0; i < DISPATCH_RUNS; i++) runs.push(await _dispatchOnly(cmds));
  runs.sort((x, y) => x.loop - y.loop);
  return runs[runs.length >> 1]!;
}

/** 8 clients through a dispatcher whose journal answers every call at once, without signature roots. */
async function _dispatchOnly(cmds: readonly IncomingCommand[]): Promise<{ loop: number; all: number }> {
  const entry = (id: string) => ({
    id,
    kind: "inventory.refresh",
    retrySafe: true,
    selfTerminating: false,
    incarnation: "bench",
    createdAt: 0,
    updatedAt: 0,
  });
  const journal = {
    resolve: () => Promise.resolve({ action: "execute" as const }),
    accept: (id: string) => Promise.resolve({ ...entry(id), state: "accepted" as const }),
    finish: (id: string, o: { state: "SUCCEEDED" }) =>
      Promise.resolve({
        ...entry(id),
        state: "done" as const,
        result: { state: o.state, bootId: "bench-boot" },
        resultAcked: false,
      }),
  } as unknown as CommandJournal;
  const waiters = new Map<string, () => void>();
  const registry = new HandlerRegistry().register({ kind: "inventory.refresh", run: () => Promise.resolve({}) });
  const d = new Dispatcher({
    journal,
    bootId: "bench-boot",
    sink: {
      send(u: CommandUpdate) {
        if (u.state !== "ACKED" && u.state !== "RUNNING") waiters.get(u.commandId)?.();
      },
    },
    specs: { requestSpec: () => {} },
    acceptance: {
      nodeId: cmds[0]!.body.nodeId,
      role: "node",
      handlers: registry,
      upgradeOnly: () => false,
      appliedGeneration: () => 0,
      serverNow: () => Date.now(),
      trustBundle: () => EMPTY_TRUST_BUNDLE,
      unbatchedPerHour: () => 0,
    },
  });
  // Each id once (the dispatcher keeps ids in flight): the first eighth warms up, the rest is measured.
  let next = 0;
  const run = async (end: number) => {
    const client = async () => {
      while (next < end) {
        const cmd = cmds[next++]!;
        const done = new Promise<void>((res) => waiters.set(cmd.body.id, res));
        await d.deliver(cmd);
        await done;
      }
    };
    await Promise.all(Array.from({ length: 8 }, client));
  };
  const warm = cmds.length >> 3;
  try {
    await run(warm);
    return await clocked(cmds.length - warm, () => run(cmds.length));
  } finally {
    await d.stop();
  }
}

/**
 * 8 clients each doing accept then finish on a real journal whose WAL restarted (as the rounds' journals): the
 * journal's share of a command.
 */
async function _journalOnly(dir: string, n: number): Promise<{ loop: number; all: number }> {
  const j = await Journal.open({ dataDir: `${dir}/stage-journal`, bootId: "bench-boot" });
  try {
    let warm = 0;
    await warmPastWalRestart(`${dir}/stage-journal/journal.db-wal`, () => acceptAndFinish(j, 64, `01WARM${warm++}-`));
    return await clocked(n, () => acceptAndFinish(j, n, "01STAGE"));
  } finally {
    await j.close();
  }
}

/**
 * Runs `batch` until a whole batch left the WAL at `walPath` at its size: SQLite checkpointed it (at 1000 frames)
 * and restarted it, and the frames written since overwrite earlier ones in place, as in a journal that has run for a
 * while (a new journal's WAL grows by every commit until then, and each of those syncs commits file system metadata
 * too). Returns the batches run; throws after `max`.
 */
export async function warmPastWalRestart(walPath: string, batch: () => Promise<unknown>, max = 200): Promise<number> {
  for (let i = 1; i <= max; i++) {
    const before = (await Deno.stat(walPath)).size;
    await batch();
    if ((await Deno.stat(walPath)).size === before) return i;
  }
  throw new Error(`${walPath} still grew after ${max} batches`);
}

/** `n` commands' accept and finish on `j`, 8 clients at a time, with ids that start with `prefix`. */
export async function acceptAndFinish(j: Journal, n: number, prefix: string): Promise<void> {
  let next = 0;
  const client = async () => {
    while (next < n) {
      const id = `${prefix}${next++}`;
      await j.accept(id, { kind: "inventory.refresh", retrySafe: true, selfTerminating: false });
      await j.finish(id, { state: "SUCCEEDED" });
    }
  };
  await Promise.all(Array.from({ length: 8 }, client));
}

/** A WAL frame of the journal's 4 KiB pages: the page and its 24-byte header. */
const _FRAME_BYTES = 4096 + 24;

/** One round of the SQL floor against the anchor measured right before it. */
export interface FloorRound {
  /** Settled commands per second. */
  readonly rate: number;
  /** Median fdatasync of the WAL after a group, ms. */
  readonly syncP50: number;
  /** The event loop's CPU per command of the SQL alone (the same groups, no sync), µs. */
  readonly sqlLoopUs: number;
  /** The event loop's CPU per WAL sync round trip (`await syncData()`: the hand-off and the wake-up), µs. */
  readonly syncLoopUs: number;
  /** WAL frames per group the measured groups appended to the file (0: every frame overwrote an older one). */
  readonly framesAppended: number;
}

/**
 * The SQL floor: `groups` groups of four accepts (`INSERT … ON CONFLICT DO NOTHING`) and the previous group's four
 * finishes (`UPDATE … RETURNING`), one `COMMIT` and one fdatasync of the WAL each, on a fresh journal's schema. With
 * `inPlace`, the WAL is first grown past what the measured groups write (the same groups, no sync) and restarted by a
 * `RESTART` checkpoint, so the measured groups overwrite it in place.
 */
export async function sqlFloor(dir: string, groups: number, round: number, inPlace = false): Promise<FloorRound> {
  const dataDir = `${dir}/floor-${round}${inPlace ? "-in-place" : ""}`;
  await (await Journal.open({ dataDir, bootId: "bench-boot" })).close(); // the journal's own schema and pragmas
  const db = new DatabaseSync(`${dataDir}/journal.db`);
  try {
    db.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
    const accept = db.prepare(
      `INSERT INTO commands (id, state, kind, retry_safe, self_terminating, incarnation, boot_id, created_at, updated_at)
       VALUES (?, 'accepted', 'inventory.refresh', 1, 0, 'floor', NULL, ?, ?) ON CONFLICT (id) DO NOTHING`,
    );
    const finish = db.prepare(
      `UPDATE commands SET state = 'done', boot_id = 'bench-boot', outcome = 'SUCCEEDED', code = NULL, message = NULL,
         body = NULL, rebooted = 0, previous_boot_id = NULL, result_acked = 0, updated_at = ?
       WHERE id = ? AND state IN ('accepted', 'running') AND incarnation = 'floor'
       RETURNING kind, retry_safe, self_terminating, created_at`,
    );
    const begin = db.prepare("BEGIN IMMEDIATE");
    const commit = db.prepare("COMMIT");
    begin.run();
    accept.run("warm", 0, 0);
    commit.run();
    const walPath = `${dataDir}/journal.db-wal`;
    const wal = await Deno.open(walPath, { read: true });
    try {
      const syncs: number[] = [];
      let prev: string[] = [];
      let n = 0;
      const group = () => {
        const now = Date.now();
        const ids: string[] = [];
        begin.run();
        for (let i = 0; i < 4; i++) {
          const id = `01FLOOR${n++}`;
          accept.run(id, now, now);
          ids.push(id);
        }
        for (const id of prev) finish.all(now, id);
        commit.run();
        prev = ids;
      };
      if (inPlace) {
        // Twice the frames the measured groups write (below SQLite's 1000-page autocheckpoint), then a restart: the
        // next writer starts again at the WAL's first frame.
        const size0 = (await wal.stat()).size;
        for (let g = 0; g < groups; g++) group();
        const perGroup = ((await wal.stat()).size - size0) / groups;
        for (let g = 0; g < groups; g++) group();
        if ((await wal.stat()).size < size0 + 2 * groups * perGroup) {
          throw new Error("the WAL did not grow as expected");
        }
        db.exec("PRAGMA wal_checkpoint(RESTART)");
        await wal.syncData();
      }
      const size = (await wal.stat()).size;
      const t0 = performance.now();
      const c0 = threadClock();
      for (let g = 0; g < groups; g++) {
        group();
        const s0 = performance.now();
        await wal.syncData();
        syncs.push(performance.now() - s0);
      }
      const c1 = threadClock();
      const appended = (await wal.stat()).size - size;
      const seconds = (performance.now() - t0) / 1000;
      // The same groups again without the syncs: the SQL's own share, and by difference each sync's.
      for (let g = 0; g < groups; g++) group();
      const c2 = threadClock();
      syncs.sort((a, b) => a - b);
      const sqlGroup = (c2.cpu - c1.cpu) / groups;
      return {
        rate: (groups * 4) / seconds,
        syncP50: syncs[syncs.length >> 1]!,
        sqlLoopUs: sqlGroup / 4,
        syncLoopUs: (c1.cpu - c0.cpu) / groups - sqlGroup,
        framesAppended: appended / groups / _FRAME_BYTES,
      };
    } finally {
      wal.close();
    }
  } finally {
    db.close();
  }
}
