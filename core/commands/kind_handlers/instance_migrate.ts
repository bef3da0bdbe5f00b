/**
 * `instance.migrate` (bcd's own kind, bulk lane, no flags; the row's reasons are in `core/commands/kinds.ts`): moves a
 * running instance through seed 001's state machine with the node's {@link InstanceMigrator} (the orchestrator in
 * `runtimes/migration/`), and reports the transcript. The lock is `instance:<id>`, so a move never overlaps a snapshot
 * or another move of the same instance.
 *
 * Outcomes: `migrated` is SUCCEEDED with `InstanceMigrateResult` (the steps, whether cleanup left something). An
 * abort before the snapshot fails `migration-aborted` with the seed's reason (`turn-in-flight-too-long`,
 * `drain-deadline`, ...); a failure after it, from which the node resumed the instance on the source, fails
 * `resumed-on-source`; a resume that failed too fails `migration-failed` (the instance runs nowhere; an operator acts).
 * Each failure's message carries the reason and the steps.
 *
 * Refusals before anything moves: `invalid-payload` (no instance id, a deadline over 10 minutes),
 * `unsupported-target` (another node: bcd moves no snapshot between hosts yet), and the migrator's
 * {@link MigrateRefused} codes: `no-instance` (no runtime holds it), `not-running`, `no-channel` (the instance has no
 * guest turn channel to drain it through).
 *
 * @module
 */
import { packResult, unpackPayload, WireDecodeError } from "../../../proto/mod.ts";
import type { HandlerContext, HandlerResult, KindHandler } from "../handlers.ts";
import { CommandFailed, InvalidPayload } from "../rejection.ts";
import { INSTANCE_ID } from "../../converge/instances/instance_id.ts";

/** The drain deadline when the payload names none. */
export const DEFAULT_DRAIN_DEADLINE_MS = 30_000;
/** The longest drain deadline a payload may name. */
export const MAX_DRAIN_DEADLINE_MS = 600_000;

/** Why a move was refused before anything moved; `code` becomes the command's error code. */
export type MigrateRefusal = "no-instance" | "not-running" | "no-channel";

/** A move the node will not start. */
export class MigrateRefused extends Error {
  override name = "MigrateRefused";
  constructor(readonly code: MigrateRefusal, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** One action of the move, as the orchestrator records it. */
export interface MigrateStep {
  readonly phase: string;
  readonly action: string;
  readonly ok: boolean;
  readonly detail?: string;
}

/** How a move ended (the orchestrator's result, without its channel). */
export interface MigrateSummary {
  readonly outcome: "migrated" | "aborted" | "resumed-on-source" | "failed";
  readonly reason: string | null;
  readonly steps: readonly MigrateStep[];
  readonly cleanupFailed: boolean;
}

/** What the handler needs of the node: one move at a time per instance (the lock sees to that). */
export interface InstanceMigrator {
  /** Moves `instanceId`; throws {@link MigrateRefused} before anything moved. */
  migrate(
    instanceId: string,
    o: { readonly migrationId: string; readonly drainDeadlineMs: number; readonly signal: AbortSignal },
  ): Promise<MigrateSummary>;
}

const FAILURE_CODE = {
  aborted: "migration-aborted",
  "resumed-on-source": "resumed-on-source",
  failed: "migration-failed",
} as const;

/** The `instance.migrate` handler; `migrator` is looked up per command (the runtime may come up after wiring). */
export function instanceMigrateHandler(ports: {
  migrator: () => InstanceMigrator | undefined;
  /** This node's id: a move to it (or to no node named) is the same-host move. */
  nodeId: string;
}): KindHandler {
  return {
    kind: "instance.migrate",
    resources(command) {
      return [`instance:${_payload(command.payload).instanceId}`];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const p = _payload(ctx.command.payload);
      if (p.targetNodeId !== "" && p.targetNodeId !== ports.nodeId) {
        throw new CommandFailed(
          "unsupported-target",
          `target_node_id ${JSON.stringify(p.targetNodeId)} is another node: bcd moves no snapshot between hosts yet`,
        );
      }
      const m = ports.migrator();
      if (!m) throw new CommandFailed("no-instance", "this host runs no instance runtime that migrates");
      let r: MigrateSummary;
      try {
        r = await m.migrate(p.instanceId, {
          migrationId: ctx.command.id,
          drainDeadlineMs: p.drainDeadlineMs,
          signal: ctx.signal,
        });
      } catch (e) {
        if (e instanceof MigrateRefused) throw new CommandFailed(e.code, e.message, { cause: e });
        throw e;
      }
      if (r.outcome !== "migrated") {
        const steps = r.steps.map((s) => `${s.phase}/${s.action}:${s.ok ? "ok" : "failed"}`).join(" ");
        throw new CommandFailed(FAILURE_CODE[r.outcome], `${r.outcome}: ${r.reason ?? "no reason"} [${steps}]`);
      }
      const any = packResult("instance.migrate", {
        outcome: r.outcome,
        steps: r.steps.map((s) => ({ phase: s.phase, action: s.action, ok: s.ok, detail: s.detail ?? "" })),
        cleanup_failed: r.cleanupFailed,
      });
      return {
        result: { typeUrl: any.type_url, value: any.value },
        ...(r.cleanupFailed ? { message: "the instance runs on the target; cleanup left the source's leftovers" } : {}),
      };
    },
  };
}

function _payload(
  p: { typeUrl: string; value: Uint8Array } | undefined,
): { instanceId: string; drainDeadlineMs: number; targetNodeId: string } {
  if (p === undefined) throw new InvalidPayload("instance.migrate needs a payload with instance_id");
  let v;
  try {
    v = unpackPayload("instance.migrate", { type_url: p.typeUrl, value: p.value });
  } catch (e) {
    if (e instanceof WireDecodeError) throw new InvalidPayload(e.message, { cause: e });
    throw e;
  }
  if (!INSTANCE_ID.test(v.instance_id)) {
    throw new InvalidPayload(`instance_id ${JSON.stringify(v.instance_id)} is not an instance id`);
  }
  if (v.drain_deadline_ms > MAX_DRAIN_DEADLINE_MS) {
    throw new InvalidPayload(`drain_deadline_ms ${v.drain_deadline_ms} is over ${MAX_DRAIN_DEADLINE_MS}`);
  }
  return {
    instanceId: v.instance_id,
    drainDeadlineMs: v.drain_deadline_ms || DEFAULT_DRAIN_DEADLINE_MS,
    targetNodeId: v.target_node_id,
  };
}
