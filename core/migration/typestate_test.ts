import assert from "node:assert/strict";
import { MigrationTransitionError } from "./errors.ts";
import { formatMigrationEvent, type MigrationEvent } from "./events.ts";
import { isLegalTransition, type Phase, phaseGauge, PHASES, TRANSITIONS } from "./phases.ts";
import { type AnyMigrationState, startMigrationFsm } from "./typestate.ts";

const VM = "7e57a1b2-0000-4000-8000-0123456789ab";

function _fsm(events: MigrationEvent[] = []) {
  let t = 1_700_000_000_000_000_000n;
  return startMigrationFsm({ vmId: VM, migrationId: "m-1", now: () => (t += 1_000n), onEvent: (e) => events.push(e) });
}

/** Walks a fresh machine to `p` by forward steps. */
function _at(p: Phase, events: MigrationEvent[] = []): AnyMigrationState {
  // deno-lint-ignore no-explicit-any
  let s: any = _fsm(events);
  while (s.phase !== p) s = s.go(TRANSITIONS.find((r) => r.from === s.phase && r.via === "advance")!.to);
  return s;
}

Deno.test("the transition table is the seed's: 9 forward steps, abort from 3 phases, resume from 3", () => {
  assert.equal(TRANSITIONS.length, 15);
  assert.deepEqual(TRANSITIONS.filter((t) => t.via === "abort").map((t) => t.from), [
    "Intent",
    "Draining",
    "Quiescent",
  ]);
  assert.deepEqual(TRANSITIONS.filter((t) => t.via === "resume-on-source").map((t) => t.from), [
    "Snapshotting",
    "Transferring",
    "Restoring",
  ]);
  for (const t of TRANSITIONS.filter((r) => r.via !== "advance")) assert.equal(t.to, "Stable");
  assert.ok(!isLegalTransition("Snapshotting", "Stable", "abort"));
  assert.ok(!isLegalTransition("Intent", "Stable", "resume-on-source"));
});

Deno.test("every legal transition runs and emits one structured event", async (t) => {
  for (const row of TRANSITIONS) {
    await t.step(`${row.from} → ${row.to} (${row.via})`, () => {
      const events: MigrationEvent[] = [];
      const s = _at(row.from, events);
      const before = events.length;
      // deno-lint-ignore no-explicit-any
      const m = s as any;
      const next = row.via === "advance"
        ? m.go(row.to)
        : row.via === "abort"
        ? m.abort("why")
        : m.resumeOnSource("why");
      assert.equal(next.phase, row.to);
      assert.equal(events.length, before + 1);
      const ev = events.at(-1)!;
      assert.deepEqual(
        { from: ev.from, to: ev.to, via: ev.via, reason: ev.reason, seq: ev.seq },
        { from: row.from, to: row.to, via: row.via, reason: row.via === "advance" ? null : "why", seq: before + 1 },
      );
      assert.equal(ev.event, "migration.transition");
      assert.equal(ev.vm_id, VM);
      assert.equal(ev.migration_id, "m-1");
      assert.ok(next.isCurrent && !s.isCurrent);
      assert.equal(next.events, s.events);
    });
  }
});

Deno.test("a full migration walks the circle back to Stable with nine events in order", () => {
  const events: MigrationEvent[] = [];
  const end = _fsm(events).go("Intent").go("Draining").go("Quiescent").go("Snapshotting").go("Transferring")
    .go("Restoring").go("CutOver").go("Cleanup").go("Stable");
  assert.equal(end.phase, "Stable");
  assert.deepEqual(events.map((e) => e.to), [...PHASES.slice(1), "Stable"]);
  assert.deepEqual(events.map((e) => e.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.ok(events.every((e, i) => i === 0 || e.ts > events[i - 1]!.ts));
  // The machine is reusable for the next migration from its final Stable.
  assert.equal(end.go("Intent").phase, "Intent");
});

Deno.test("a state object already left refuses a second transition as stale-state", () => {
  const intent = _fsm().go("Intent");
  intent.go("Draining");
  assert.throws(
    () => intent.abort("late"),
    (e: unknown) => e instanceof MigrationTransitionError && e.reason === "stale-state",
  );
  assert.throws(() => intent.go("Draining"), /stale-state: m-1: Intent was already left \(now Draining\)/);
});

Deno.test("an event is one JSON line with the timestamp as an exact integer of nanoseconds", () => {
  const events: MigrationEvent[] = [];
  _fsm(events).go("Intent").abort("operator");
  const line = formatMigrationEvent(events[1]!);
  assert.equal(
    line,
    `{"event":"migration.transition","vm_id":"${VM}","migration_id":"m-1","seq":2,"from":"Intent","to":"Stable",` +
      `"via":"abort","reason":"operator","ts":1700000000000002000}`,
  );
  assert.equal(JSON.parse(line).reason, "operator");
});

Deno.test("the gauge numbers phases in the seed's order", () => {
  assert.deepEqual(PHASES.map(phaseGauge), [0, 1, 2, 3, 4, 5, 6, 7, 8]);
});
