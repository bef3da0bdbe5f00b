import assert from "node:assert/strict";
import { packPayload, unpackResult } from "../../../proto/mod.ts";
import { silentLogger } from "../../log/mod.ts";
import { commandBody } from "../command.ts";
import { CommandFailed, InvalidPayload } from "../rejection.ts";
import {
  DEFAULT_DRAIN_DEADLINE_MS,
  instanceMigrateHandler,
  type InstanceMigrator,
  MigrateRefused,
  type MigrateSummary,
} from "./instance_migrate.ts";

function ctx(p: { instance_id: string; drain_deadline_ms?: number; target_node_id?: string }) {
  const any = packPayload("instance.migrate", { drain_deadline_ms: 0, target_node_id: "", ...p });
  return {
    command: commandBody({
      id: "c-1",
      nodeId: "n",
      kind: "instance.migrate",
      payload: { typeUrl: any.type_url, value: any.value },
    }),
    signal: new AbortController().signal,
    bootId: "boot-1",
    logger: silentLogger(),
  };
}

class Mover implements InstanceMigrator {
  readonly calls: string[] = [];
  constructor(readonly answer: MigrateSummary | MigrateRefused) {}
  migrate(id: string, o: { migrationId: string; drainDeadlineMs: number }): Promise<MigrateSummary> {
    this.calls.push(`${id} ${o.migrationId} ${o.drainDeadlineMs}`);
    return this.answer instanceof MigrateRefused ? Promise.reject(this.answer) : Promise.resolve(this.answer);
  }
}

const STEPS = [
  { phase: "Draining", action: "drain", ok: true },
  { phase: "Snapshotting", action: "snapshot", ok: true },
  { phase: "Restoring", action: "restore-target", ok: true },
  { phase: "Cleanup", action: "cleanup", ok: true },
];

Deno.test("instance.migrate: a move reports its steps; the default drain deadline; the instance lock", async () => {
  const m = new Mover({ outcome: "migrated", reason: null, steps: STEPS, cleanupFailed: false });
  const h = instanceMigrateHandler({ migrator: () => m, nodeId: "n" });
  const c = ctx({ instance_id: "i-1" });
  assert.deepEqual(h.resources!(c.command), ["instance:i-1"]);
  const out = await h.run(c);
  const r = unpackResult("instance.migrate", { type_url: out.result!.typeUrl, value: out.result!.value });
  assert.equal(r.outcome, "migrated");
  assert.deepEqual(
    r.steps.map((s) => `${s.phase}/${s.action}/${s.ok}`),
    STEPS.map((s) => `${s.phase}/${s.action}/${s.ok}`),
  );
  assert.equal(r.cleanup_failed, false);
  assert.deepEqual(m.calls, [`i-1 c-1 ${DEFAULT_DRAIN_DEADLINE_MS}`]);
});

Deno.test("instance.migrate fails by name: each outcome other than migrated, and each refusal", async (t) => {
  const rows: [MigrateSummary | MigrateRefused, string, RegExp][] = [
    [
      { outcome: "aborted", reason: "turn-in-flight-too-long", steps: STEPS.slice(0, 1), cleanupFailed: false },
      "migration-aborted",
      /turn-in-flight-too-long \[Draining\/drain:ok\]/,
    ],
    [
      { outcome: "resumed-on-source", reason: "restore-failed: x", steps: STEPS.slice(0, 3), cleanupFailed: false },
      "resumed-on-source",
      /restore-failed: x/,
    ],
    [
      { outcome: "failed", reason: "restore-failed: x; resume on source failed: y", steps: [], cleanupFailed: false },
      "migration-failed",
      /resume on source failed/,
    ],
    [new MigrateRefused("no-channel", "i-1 has no guest turn channel"), "no-channel", /no guest turn channel/],
    [new MigrateRefused("not-running", "i-1 is shut off"), "not-running", /shut off/],
    [new MigrateRefused("no-instance", "no runtime holds i-1"), "no-instance", /no runtime/],
  ];
  for (const [answer, code, message] of rows) {
    await t.step(code, async () => {
      const h = instanceMigrateHandler({ migrator: () => new Mover(answer), nodeId: "n" });
      await assert.rejects(h.run(ctx({ instance_id: "i-1" })), (e: unknown) => {
        assert.ok(e instanceof CommandFailed);
        assert.equal(e.code, code);
        assert.match(e.message, message);
        return true;
      });
    });
  }
  await t.step("no runtime on this host", async () => {
    const h = instanceMigrateHandler({ migrator: () => undefined, nodeId: "n" });
    await assert.rejects(h.run(ctx({ instance_id: "i-1" })), { name: "CommandFailed", code: "no-instance" });
  });
  await t.step("another node as the target, before anything moves", async () => {
    const m = new Mover(new MigrateRefused("no-instance", "never asked"));
    const h = instanceMigrateHandler({ migrator: () => m, nodeId: "n" });
    await assert.rejects(h.run(ctx({ instance_id: "i-1", target_node_id: "other" })), {
      name: "CommandFailed",
      code: "unsupported-target",
    });
    await h.run(ctx({ instance_id: "i-1", target_node_id: "n" })).catch((e) => assert.equal(e.code, "no-instance"));
    assert.equal(m.calls.length, 1, "only the move to this node reached the migrator");
  });
  await t.step("invalid payloads: a path for an instance id, a deadline over 10 minutes", () => {
    const h = instanceMigrateHandler({ migrator: () => undefined, nodeId: "n" });
    assert.throws(() => h.resources!(ctx({ instance_id: "../etc" }).command), InvalidPayload);
    assert.throws(() => h.resources!(ctx({ instance_id: "i-1", drain_deadline_ms: 600_001 }).command), InvalidPayload);
  });
});
