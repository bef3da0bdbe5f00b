/**
 * bcd's own metrics (issue 16): what each is, read from the running agent at collection time (observable instruments)
 * except the converge pass duration, a histogram recorded as each pass ends. Names:
 *
 * | metric | kind | attributes | from |
 * | ------ | ---- | ---------- | ---- |
 * | `bcd.commands.settled` | counter | `kind`, `state` (`SUCCEEDED`, `FAILED`, `REJECTED`, `CANCELLED`) | the dispatcher's terminal updates |
 * | `bcd.lane.queue_depth` | gauge | `lane` | commands holding a credit and waiting for a worker |
 * | `bcd.lane.credits_free` | gauge | `lane` | the lane's free credits |
 * | `bcd.lane.running` | gauge | `lane` | commands on a worker |
 * | `bcd.converge.pass.duration` | histogram, ms | | every converge pass |
 * | `bcd.section.status` | gauge (1) | `section`, `state` | the last pass's section statuses |
 * | `bcd.journal.size` | gauge, bytes | | `journal.db` and its WAL |
 * | `bcd.journal.unacked_events` | gauge | `class` | events not yet acked by the gateway |
 * | `bcd.gpu.holds` | gauge | | the holds the devices converger last read |
 * | `bcd.instances` | gauge | `state` | the instances the runtimes report |
 * | `bcd.instance.migration.phase` | gauge | `instance` | a move in progress: its phase's index in `core/migration` `PHASES` (a move that ended is no longer listed) |
 * | `bcd.instance.memory.balloon.reclaimed` | gauge, bytes | `instance` | what each running ballooned guest lends the host (its memory less what the balloon leaves it), only for guests whose spec asks for a balloon (000 §Memory ballooning; the balloon loop's last pass) |
 * | `bcd.session.reconnects` | counter | | sessions after the first |
 * | `bcd.telemetry.dropped` | counter | | exports dropped (one already in flight) or failed |
 *
 * @module
 */
import type { Meter } from "@opentelemetry/api";

/** What the metrics read; each part optional (a role without devices has no holds). */
export interface TelemetrySources {
  /** Terminal updates so far, by kind and state. */
  settled(): ReadonlyMap<string, ReadonlyMap<string, number>>;
  lanes(): readonly { lane: string; queued: number; running: number; freeCredits: number }[];
  sections(): readonly { section: string; state: string }[];
  journal(): Promise<{ sizeBytes: number; unacked: Readonly<Record<string, number>> }>;
  holds?(): number;
  instances?(): readonly { state: string }[];
  /** Moves in progress (`instance.migrate`), each with its phase gauge. */
  migrations?(): readonly { instance: string; gauge: number }[];
  /** What each ballooned guest lends the host, bytes (`core/balloon`'s loop). */
  balloons?(): readonly { instance: string; bytes: number }[];
  /** Sessions opened so far. */
  sessions(): number;
  /** Exports dropped so far. */
  dropped(): number;
}

/** Registers the instruments on `meter`; returns the pass-duration recorder. */
export function registerBcdMetrics(meter: Meter, s: TelemetrySources): (passMs: number) => void {
  meter.createObservableCounter("bcd.commands.settled", { description: "commands settled, by kind and terminal state" })
    .addCallback((o) => {
      for (const [kind, byState] of s.settled()) for (const [state, n] of byState) o.observe(n, { kind, state });
    });
  const queue = meter.createObservableGauge("bcd.lane.queue_depth", { description: "commands waiting for a worker" });
  const free = meter.createObservableGauge("bcd.lane.credits_free", { description: "free credits of the lane" });
  const running = meter.createObservableGauge("bcd.lane.running", { description: "commands on a worker" });
  meter.addBatchObservableCallback((o) => {
    for (const l of s.lanes()) {
      o.observe(queue, l.queued, { lane: l.lane });
      o.observe(free, l.freeCredits, { lane: l.lane });
      o.observe(running, l.running, { lane: l.lane });
    }
  }, [queue, free, running]);
  const pass = meter.createHistogram("bcd.converge.pass.duration", {
    unit: "ms",
    description: "converge pass duration",
  });
  meter.createObservableGauge("bcd.section.status", { description: "1 for each section's state in the last pass" })
    .addCallback((o) => {
      for (const x of s.sections()) o.observe(1, { section: x.section, state: x.state });
    });
  const size = meter.createObservableGauge("bcd.journal.size", { unit: "By", description: "journal.db and its WAL" });
  const unacked = meter.createObservableGauge("bcd.journal.unacked_events", { description: "events not yet acked" });
  meter.addBatchObservableCallback(async (o) => {
    const j = await s.journal();
    o.observe(size, j.sizeBytes);
    for (const [cls, n] of Object.entries(j.unacked)) o.observe(unacked, n, { class: cls });
  }, [size, unacked]);
  if (s.holds) {
    const holds = s.holds;
    meter.createObservableGauge("bcd.gpu.holds", { description: "GPU holds bound on this host" })
      .addCallback((o) => o.observe(holds()));
  }
  if (s.instances) {
    const instances = s.instances;
    meter.createObservableGauge("bcd.instances", { description: "instances the runtimes report, by state" })
      .addCallback((o) => {
        const by = new Map<string, number>();
        for (const i of instances()) by.set(i.state, (by.get(i.state) ?? 0) + 1);
        for (const [state, n] of by) o.observe(n, { state });
      });
  }
  if (s.migrations) {
    const migrations = s.migrations;
    meter.createObservableGauge("bcd.instance.migration.phase", {
      description: "the phase of each move in progress (its index in the migration phases)",
    }).addCallback((o) => {
      for (const m of migrations()) o.observe(m.gauge, { instance: m.instance });
    });
  }
  if (s.balloons) {
    const balloons = s.balloons;
    meter.createObservableGauge("bcd.instance.memory.balloon.reclaimed", {
      unit: "By",
      description: "what each running ballooned guest lends the host: its memory less what the balloon leaves it",
    }).addCallback((o) => {
      for (const b of balloons()) o.observe(b.bytes, { instance: b.instance });
    });
  }
  meter.createObservableCounter("bcd.session.reconnects", { description: "sessions opened after the first" })
    .addCallback((o) => o.observe(Math.max(0, s.sessions() - 1)));
  meter.createObservableCounter("bcd.telemetry.dropped", { description: "exports dropped or failed" })
    .addCallback((o) => o.observe(s.dropped()));
  return (ms) => pass.record(ms);
}
