/**
 * The acceptance checks (000 §Acceptance checks), in the seed's order, for a delivered command the journal's
 * duplicate rules sent to execution (a new one, or a retry-safe one a crash interrupted):
 *
 * 1. `UNSUPPORTED`: another node's body, an unknown kind, a kind outside this agent's role (or without a handler in
 *    this build), or anything but `daemon.upgrade` while the session is upgrade-only;
 * 2. `min_generation` above the applied generation: defer (the caller sends `SpecRequest{MIN_GENERATION}`); still
 *    behind at `not_after`, `STALE_GENERATION`;
 * 3. `EXPIRED`: past `not_after` in server time, or no `not_after`;
 * 4. `BAD_SIGNATURE`: once the trust bundle holds command-signing roots, a missing, unknown-key or invalid signature
 *    on any command of any kind; the body's flags never decide whether one is required (a verifier that cannot
 *    decide, its thread having failed, throws instead: the delivery fails, nothing is journaled);
 * 5. `BATCH_UNAPPROVED` / `UNBATCHED_LIMIT`: with approver keys, a destructive kind (by the kinds table, never the
 *    body's word) whose batch does not admit it, or an unbatched one beyond the hourly allowance.
 *
 * Check 6 (`BUSY`: no lane credit, journal full) is the dispatcher's, after these; so a bad signature is refused even
 * when the lane has no credit. Nothing here writes: an admitted command's quorum ticket is recorded by the
 * dispatcher once the command is accepted.
 *
 * Interpretation: a command behind on its generation whose `not_after` has already passed is `STALE_GENERATION` (the
 * order puts the generation first); one behind with no `not_after` at all is `EXPIRED`, since it could never be
 * deferred to a deadline.
 *
 * @module
 */
import { enforcesQuorum, enforcesSignatures, type TrustBundle } from "../pki/trust_bundle.ts";
import { type Ed25519Verify, verifyEnvelope } from "../pki/envelope.ts";
import { SignatureError } from "../pki/signature_error.ts";
import { QuorumError, verifyBatch } from "../pki/quorum.ts";
import type { QuorumLedger, QuorumTicket } from "../pki/quorum_ledger.ts";
import type { IncomingCommand } from "./command.ts";
import type { HandlerRegistry, KindHandler } from "./handlers.ts";
import { kindRoleOf, type KindSpec, lookupKind, type Role } from "./kinds.ts";
import type { TerminalRejectReason } from "./rejection.ts";

/** The kind an upgrade-only session still accepts. */
export const UPGRADE_KIND = "daemon.upgrade";

/** What the checks read, injected. */
export interface AcceptanceContext {
  /** This node's id (the session's). */
  readonly nodeId: string;
  readonly role: Role;
  readonly handlers: HandlerRegistry;
  /** True while the session is upgrade-only. */
  upgradeOnly(): boolean;
  /** The newest spec generation the daemon holds. */
  appliedGeneration(): number;
  /** Server time in unix ms: the host clock plus the `Welcome` offset. */
  serverNow(): number;
  trustBundle(): TrustBundle;
  /** The quorum ledger in data_dir; required once the bundle holds approver keys. */
  readonly ledger?: QuorumLedger;
  /** `unbatched_destructive_per_hour`. */
  unbatchedPerHour(): number;
  /**
   * The signature check's Ed25519 verifier; default WebCrypto (`verifyEd25519`; `verifyEd25519Batched` is the thread). It
   * resolves a verdict or rejects without one (`VerifierThreadError`), which the checks let propagate: a verifier
   * that cannot decide never admits a command nor refuses it as `BAD_SIGNATURE`.
   */
  readonly verifyEd25519?: Ed25519Verify;
}

/** The checks' verdict. */
export type AcceptanceVerdict =
  | { readonly verdict: "reject"; readonly reason: TerminalRejectReason; readonly message: string }
  | { readonly verdict: "defer"; readonly message: string }
  | {
    readonly verdict: "admit";
    readonly spec: KindSpec;
    readonly handler: KindHandler;
    /** To record once the command is accepted (a batch leaf, or one more unbatched destructive command). */
    readonly quorum?: QuorumTicket;
  };

function reject(reason: TerminalRejectReason, message: string): AcceptanceVerdict {
  return { verdict: "reject", reason, message };
}

/** Runs checks 1–5 in order and returns the first refusal, a deferral, or the admission. */
export async function runAcceptanceChecks(ctx: AcceptanceContext, cmd: IncomingCommand): Promise<AcceptanceVerdict> {
  const body = cmd.body;
  // 1. UNSUPPORTED
  if (body.nodeId !== ctx.nodeId) {
    return reject("UNSUPPORTED", `the body names node ${JSON.stringify(body.nodeId)}, this is ${ctx.nodeId}`);
  }
  if (ctx.upgradeOnly() && body.kind !== UPGRADE_KIND) {
    return reject("UNSUPPORTED", `the session is upgrade-only; ${body.kind} is refused`);
  }
  const spec = lookupKind(body.kind);
  if (spec === undefined) return reject("UNSUPPORTED", `unknown kind ${JSON.stringify(body.kind)}`);
  const kindRole = kindRoleOf(ctx.role);
  if (kindRole === undefined || !spec.roles.includes(kindRole)) {
    return reject("UNSUPPORTED", `kind ${body.kind} is not allowed for the ${ctx.role} role`);
  }
  const handler = ctx.handlers.get(body.kind);
  if (handler === undefined) return reject("UNSUPPORTED", `kind ${body.kind} is not implemented by this build`);

  const now = ctx.serverNow();
  // 2. min_generation
  const applied = ctx.appliedGeneration();
  if (body.minGeneration > applied) {
    if (body.notAfterMs === undefined) return reject("EXPIRED", "the command has no not_after");
    if (now > body.notAfterMs) {
      return reject(
        "STALE_GENERATION",
        `min_generation ${body.minGeneration} is above the applied generation ${applied} at not_after`,
      );
    }
    return { verdict: "defer", message: `waiting for generation ${body.minGeneration}, have ${applied}` };
  }
  // 3. EXPIRED
  if (body.notAfterMs === undefined) return reject("EXPIRED", "the command has no not_after");
  if (now > body.notAfterMs) {
    return reject("EXPIRED", `server time ${now} is past not_after ${body.notAfterMs}`);
  }
  // 4. BAD_SIGNATURE
  const bundle = ctx.trustBundle();
  if (enforcesSignatures(bundle)) {
    try {
      await verifyEnvelope(bundle.commandSigningRoots, "command", cmd.bodyBytes, cmd.signature, now, ctx.verifyEd25519);
    } catch (e) {
      if (e instanceof SignatureError) return reject("BAD_SIGNATURE", e.message);
      throw e;
    }
  }
  // 5. the quorum
  if (enforcesQuorum(bundle) && spec.destructive) {
    if (ctx.ledger === undefined) throw new Error("approver keys are present but no quorum ledger is open");
    try {
      if (body.batchId !== "") {
        const subject = handler.batchSubject?.(body) ?? body.nodeId;
        const admission = await verifyBatch(
          bundle,
          body.batchId,
          { subject, kind: body.kind },
          cmd.batchApproval,
          cmd.batchProof,
          now,
        );
        return { verdict: "admit", spec, handler, quorum: ctx.ledger.checkLeaf(body.id, admission) };
      }
      return { verdict: "admit", spec, handler, quorum: ctx.ledger.checkUnbatched(body.id, ctx.unbatchedPerHour()) };
    } catch (e) {
      if (e instanceof QuorumError) return reject(e.reason, e.message);
      throw e;
    }
  }
  return { verdict: "admit", spec, handler };
}
