/**
 * The turn-vs-drain chaos simulation of seed 001: a stream of turns with a drain dropped at a random offset, over
 * seeded interleavings of message latency, turn duration and host decisions (abort on deadline, DrainCancel from
 * Quiescent, a full migration with a restore on a new connection, or a resume on the source). Every connection
 * authenticates with the channel key first (`core/turns/auth.ts`); the target host proves the next restore epoch,
 * which alone reopens the drained guest's gate, and the host holds its messages until the guest's `AuthOk`. The real
 * {@link TurnsEngine} plays the guest; the host walks the typestate of `core/migration/`. Each seed asserts:
 *
 * 1. every attempted turn eventually runs, exactly once (zero dropped);
 * 2. each `DrainAck`'s `in_flight` is the turn whose process was running at the instant the drain was handled;
 * 3. no turn starts while the gate is closed (and never two at once).
 *
 * Time is simulated (integer ticks in a small range, so ties are frequent and broken by the seed).
 *
 * @module
 */
import { type AnyMigrationState, type Draining, startMigrationFsm } from "../../core/migration/mod.ts";
import { silentLogger } from "../../core/log/mod.ts";
import {
  type ChannelKey,
  channelProof,
  type GuestMessage,
  type HostMessage,
  parseChannelKey,
} from "../../core/turns/mod.ts";
import { type ConnId, type EngineAction, TurnsEngine } from "./engine.ts";
import { mulberry32 as prng } from "../../core/rand/mulberry32.ts";

/** What of the engine the simulation drives (tests substitute broken engines to prove the checks bite). */
export type SimEngine = Pick<TurnsEngine, "connected" | "disconnected" | "received" | "turnExited">;

/** The channel key of the simulated VM (an engine a test substitutes must hold it too). */
export const SIM_CHANNEL_KEY: ChannelKey = parseChannelKey("5e".repeat(32));
/** The simulated VM's id. */
export const SIM_VM_ID = "00000000-0000-4000-8000-000000000001";

/** A broken invariant, naming the seed that broke it. */
export class ChaosViolation extends Error {
  override name = "ChaosViolation";
  constructor(readonly seed: number, message: string) {
    super(`seed ${seed}: ${message}`);
  }
}

/** What one seed did, for the summary. */
export interface ChaosOutcome {
  readonly seed: number;
  readonly turns: number;
  readonly drains: number;
  readonly quiescent: number;
  readonly aborted: number;
  readonly migrated: number;
  readonly resumedOnSource: number;
  readonly ackedInFlight: number;
}

type _Ev = { at: number; tie: number; run: () => void };

/** Runs one seed; throws {@link ChaosViolation} on a broken invariant. */
export function runChaosSeed(
  seed: number,
  makeEngine?: (now: () => bigint) => SimEngine,
  trace?: (line: string) => void,
): ChaosOutcome {
  const rnd = prng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const fail = (msg: string): never => {
    throw new ChaosViolation(seed, msg);
  };
  let now = 0;
  const queue: _Ev[] = [];
  const at = (t: number, run: () => void, tie = rnd()) => {
    const ev = { at: t, tie, run };
    const i = queue.findIndex((e) => e.at > ev.at || (e.at === ev.at && e.tie > ev.tie));
    queue.splice(i === -1 ? queue.length : i, 0, ev);
  };
  const clock = () => BigInt(now) * 1_000n;
  const engine: SimEngine = makeEngine?.(clock) ??
    new TurnsEngine({
      vmId: SIM_VM_ID,
      guestdVersion: "0.1.0",
      mode: "native",
      now: clock,
      logger: silentLogger(),
      channelKey: SIM_CHANNEL_KEY,
      nonce: () => (nonces++).toString(16).padStart(64, "0"),
    });
  let nonces = 0;

  // Ground truth, kept outside the engine.
  const ran = new Map<number, number>(); // turn id → times its process was started
  let running: number | null = null; // the turn whose process is running (spawned, exit not yet handled)
  let gateClosed = false; // from the instant a DrainRequest is handled to the DrainCancel / restore that reopens
  let frozen = false; // the VM is paused for its snapshot: the guest handles nothing
  const frozenBacklog: (() => void)[] = [];

  // Channels: FIFO per direction per connection, with random latency.
  let conn: ConnId | null = null;
  let nextConn = 1;
  /** A FIFO channel: deliveries never overtake each other, even at the same tick; others may interleave. */
  const fifo = () => {
    let last = 0;
    let lastTie = 0;
    return (run: () => void) => {
      const t = Math.max(last, now + int(0, 4));
      lastTie = t === last ? lastTie + (1 - lastTie) * rnd() : rnd();
      last = t;
      at(t, run, lastTie);
    };
  };
  const toGuestFifo = fifo();
  const toHostFifo = fifo();
  const toGuest = (c: ConnId, m: HostMessage) => {
    toGuestFifo(() =>
      guest(() => {
        trace?.(
          `${now} guest<${c} ${JSON.stringify(m, (_k, v) => typeof v === "bigint" ? String(v) : v)} open=${
            conns.has(c)
          }`,
        );
        if (conns.has(c) && !abandoned.has(c)) act(engine.received(c, m), `received ${m.type}`, m);
      })
    );
  };
  const conns = new Set<ConnId>();
  const abandoned = new Set<ConnId>();
  const guest = (fn: () => void) => (frozen ? frozenBacklog.push(fn) : fn());

  const act = (actions: EngineAction[], cause: string, m?: HostMessage) => {
    if (m?.type === "DrainRequest") {
      let inFlight: number | null | undefined = undefined;
      for (const a of actions) if (a.kind === "send" && a.msg.type === "DrainAck") inFlight = a.msg.in_flight;
      if (inFlight === undefined) fail("DrainRequest without DrainAck");
      if (inFlight !== running) fail(`DrainAck in_flight=${inFlight} but turn ${running} was running at the drain`);
      gateClosed = true;
    }
    if (m?.type === "DrainCancel") gateClosed = false;
    for (const a of actions) {
      if (a.kind === "close") fail(`the guest refused the honest host's connection ${a.conn}: ${a.reason}`);
      if (a.kind === "send" && a.msg.type === "Resumed") {
        if (!restoring.has(a.conn)) fail(`Resumed on connection ${a.conn}, which proved no restore`);
        gateClosed = false;
      }
      if (a.kind === "start-turn") {
        if (gateClosed) fail(`turn ${a.turnId} started while the gate was closed (${cause})`);
        if (running !== null) fail(`turn ${a.turnId} started while turn ${running} ran`);
        running = a.turnId;
        ran.set(a.turnId, (ran.get(a.turnId) ?? 0) + 1);
        const id = a.turnId;
        at(now + int(0, 12), () =>
          guest(() => {
            running = null;
            act(engine.turnExited(id, 0), `exit ${id}`);
          }));
      } else if (a.kind === "send") {
        const c = a.conn;
        const msg = a.msg;
        toHostFifo(() => {
          trace?.(`${now} host<${c} ${msg.type} ${"turn_id" in msg ? msg.turn_id : ""}`);
          if (conns.has(c)) host(c, msg);
        });
      }
    }
  };

  /** Connections whose proof claims the next epoch (the target host after a restore). */
  const restoring = new Set<ConnId>();
  /** What to do once a connection is authenticated. */
  const onAuthed = new Map<ConnId, () => void>();
  /** Opens a connection; the host uses it (`conn`) only after the guest's `AuthOk`. */
  const connect = (restore: boolean, then?: () => void) => {
    const c = nextConn++;
    conns.add(c);
    if (restore) restoring.add(c);
    if (then) onAuthed.set(c, then);
    guest(() => act(engine.connected(c), `connect ${c}`));
  };
  const authHost = (c: ConnId, m: GuestMessage) => {
    if (m.type === "AuthChallenge") {
      const p = {
        vmId: SIM_VM_ID,
        guestNonce: m.nonce,
        hostNonce: "f".repeat(63) + (c % 16).toString(16),
        epoch: m.epoch + (restoring.has(c) ? 1 : 0),
        timeNs: clock(),
      };
      const mac = channelProof(SIM_CHANNEL_KEY, "host", p);
      toGuest(c, { type: "AuthProof", nonce: p.hostNonce, epoch: p.epoch, time_ns: p.timeNs, mac });
      return true;
    }
    if (m.type === "AuthOk") {
      conn = c;
      onAuthed.get(c)?.();
      onAuthed.delete(c);
      for (const held of outbox.splice(0)) toGuest(c, held);
      return true;
    }
    return false;
  };
  const disconnect = (c: ConnId) => {
    conns.delete(c);
    if (conn === c) conn = null;
    guest(() => engine.disconnected(c));
  };

  // The host: submits turns, drains once or more, decides what happens after.
  const turns = int(1, 25);
  const drains = int(1, 3);
  let nextTurn = 0;
  const outbox: HostMessage[] = [];
  const send = (m: HostMessage) => (conn === null ? outbox.push(m) : toGuest(conn, m));
  let state: AnyMigrationState = startMigrationFsm({ vmId: "sim", migrationId: `seed-${seed}`, now: clock });
  let draining: Draining | null = null;
  let waitingFor: number | null | undefined = undefined;
  let deadlineAt = 0;
  let drainsDone = 0;
  const stats = { quiescent: 0, aborted: 0, migrated: 0, resumedOnSource: 0, ackedInFlight: 0 };

  const unstarted = new Set<number>(); // RunTurns sent whose TurnStarted the host has not seen
  const host = (c: ConnId, m: GuestMessage) => {
    if (authHost(c, m)) return;
    if (m.type === "TurnStarted") unstarted.delete(m.turn_id);
    if (draining === null) return;
    if (m.type === "DrainAck" && waitingFor === undefined) {
      waitingFor = m.in_flight;
      if (m.in_flight !== null) stats.ackedInFlight++;
    } else if (m.type === "TurnEnded" && waitingFor === m.turn_id) waitingFor = null;
    if (waitingFor === null && now <= deadlineAt) quiesced();
  };
  const startDrain = () => {
    if (state.phase !== "Stable" || conn === null) return void at(now + int(1, 10), startDrain);
    draining = (state as ReturnType<typeof startMigrationFsm>).go("Intent").go("Draining");
    state = draining;
    waitingFor = undefined;
    const deadline = int(2, 20);
    deadlineAt = now + deadline;
    send({ type: "DrainRequest", deadline_ms: deadline });
    const d = draining;
    at(deadlineAt + 1, () => {
      if (state !== d) return;
      state = d.abort(waitingFor === undefined ? "drain-timeout" : "turn-in-flight-too-long");
      draining = null;
      stats.aborted++;
      send({ type: "DrainCancel" });
      nextDrain();
    });
  };
  const quiesced = () => {
    const q = draining!.go("Quiescent");
    draining = null;
    stats.quiescent++;
    const choice = rnd();
    if (choice < 0.35) {
      state = q.abort("operator");
      send({ type: "DrainCancel" });
      return nextDrain();
    }
    const snap = q.go("Snapshotting");
    state = snap;
    frozen = true; // paused for the snapshot
    if (choice < 0.55) {
      // The snapshot or the transfer fails: resume on the source, whose connection is still there.
      at(now + int(1, 8), () => {
        state = snap.resumeOnSource("transfer-failed");
        stats.resumedOnSource++;
        thaw();
        send({ type: "DrainCancel" });
        nextDrain();
      });
      return;
    }
    const old = conn!;
    // The source's channel does not survive the move. The guest may see it close before the target connects, or
    // only later (a TCP connection looks alive to a restored guest until it next writes).
    const lateClose = rnd() < 0.5;
    at(now + int(1, 8), () => {
      conn = null;
      abandoned.add(old); // what the source sent and the guest had not read is lost with the snapshot
      if (!lateClose) disconnect(old);
      const restoringState = snap.go("Transferring").go("Restoring");
      at(now + int(1, 8), () => {
        thaw();
        state = restoringState.go("CutOver");
        // The target host reaches the restored guest and proves the next epoch. RunTurns in flight on the dead
        // channel were lost with it: once authenticated, the host sends again, in order, every turn it has not
        // seen start (those the guest already holds are ignored there, as turn ids only grow), then the rest of
        // what it held while no channel was open.
        connect(true, () => {
          const held = outbox.splice(0).filter((m) => m.type !== "RunTurn");
          for (const id of [...unstarted].sort((a, b) => a - b)) outbox.push({ type: "RunTurn", turn_id: id });
          outbox.push(...held);
        });
        if (lateClose) at(now + int(0, 20), () => disconnect(old));
        state = (state as ReturnType<typeof restoringState.go>).go("Cleanup").go("Stable");
        stats.migrated++;
        nextDrain();
      });
    });
  };
  const thaw = () => {
    frozen = false;
    for (const fn of frozenBacklog.splice(0)) fn();
  };
  const nextDrain = () => {
    if (++drainsDone < drains) at(now + int(0, 30), startDrain);
  };

  connect(false);
  for (let i = 0; i < turns; i++) {
    at(int(0, 60), () => {
      unstarted.add(nextTurn);
      send({ type: "RunTurn", turn_id: nextTurn++ });
    });
  }
  at(int(0, 60), startDrain);

  for (let steps = 0; queue.length > 0; steps++) {
    if (steps > 100_000) fail("simulation did not settle");
    const ev = queue.shift()!;
    now = ev.at;
    ev.run();
  }
  if (frozen) fail("simulation ended with the VM paused");
  const endPhase = (state as AnyMigrationState).phase;
  if (endPhase !== "Stable") fail(`host FSM ended in ${endPhase}`);
  if (gateClosed) fail("simulation ended with the gate closed");
  for (let id = 0; id < turns; id++) {
    const n = ran.get(id) ?? 0;
    if (n !== 1) fail(`turn ${id} ran ${n} times (every attempted turn runs exactly once)`);
  }
  return { seed, turns, drains: drainsDone, ...stats };
}
