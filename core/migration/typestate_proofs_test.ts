// Compile-time proofs: every transition the seed forbids is a type error. `deno check` (and `deno test`, which
// type-checks first) fails on an unused `@ts-expect-error`, so each line below is proven to be refused by the
// compiler. Each refused call is also run, to show the run-time guard refuses a cast that bypassed the types.
// Generated once from the phase table (9 phases: 72 wrong forward targets, 6 aborts, 6 resumes); edit by hand.
import assert from "node:assert/strict";
import { MigrationTransitionError } from "./errors.ts";
import type { Phase } from "./phases.ts";
import { startMigrationFsm, type StateOf } from "./typestate.ts";

const VM = "7e57a1b2-0000-4000-8000-0123456789ab";
const PATH: Phase[] = [
  "Intent",
  "Draining",
  "Quiescent",
  "Snapshotting",
  "Transferring",
  "Restoring",
  "CutOver",
  "Cleanup",
];

/** A fresh state machine walked forward to `p`. */
function reach<P extends Phase>(p: P): StateOf[P] {
  // deno-lint-ignore no-explicit-any
  let s: any = startMigrationFsm({ vmId: VM, migrationId: "proof", now: () => 0n });
  for (const step of PATH) {
    if (s.phase === p) break;
    s = s.go(step);
  }
  assert.equal(s.phase, p);
  return s;
}

/** Runs a call the compiler refused and asserts the run time refuses it too. */
function illegal(fn: () => unknown): void {
  assert.throws(
    fn,
    (e: unknown) =>
      (e instanceof MigrationTransitionError && e.reason === "illegal-transition") || e instanceof TypeError,
  );
}

Deno.test("Stable: only the forward step to Intent compiles; every other target is a type error", () => {
  assert.equal(reach("Stable").go("Intent").phase, "Intent");
  // @ts-expect-error Stable → Stable is not the forward step
  illegal(() => reach("Stable").go("Stable"));
  // @ts-expect-error Stable → Draining is not the forward step
  illegal(() => reach("Stable").go("Draining"));
  // @ts-expect-error Stable → Quiescent is not the forward step
  illegal(() => reach("Stable").go("Quiescent"));
  // @ts-expect-error Stable → Snapshotting is not the forward step
  illegal(() => reach("Stable").go("Snapshotting"));
  // @ts-expect-error Stable → Transferring is not the forward step
  illegal(() => reach("Stable").go("Transferring"));
  // @ts-expect-error Stable → Restoring is not the forward step
  illegal(() => reach("Stable").go("Restoring"));
  // @ts-expect-error Stable → CutOver is not the forward step
  illegal(() => reach("Stable").go("CutOver"));
  // @ts-expect-error Stable → Cleanup is not the forward step
  illegal(() => reach("Stable").go("Cleanup"));
});

Deno.test("Intent: only the forward step to Draining compiles; every other target is a type error", () => {
  assert.equal(reach("Intent").go("Draining").phase, "Draining");
  // @ts-expect-error Intent → Stable is not the forward step
  illegal(() => reach("Intent").go("Stable"));
  // @ts-expect-error Intent → Intent is not the forward step
  illegal(() => reach("Intent").go("Intent"));
  // @ts-expect-error Intent → Quiescent is not the forward step
  illegal(() => reach("Intent").go("Quiescent"));
  // @ts-expect-error Intent → Snapshotting is not the forward step
  illegal(() => reach("Intent").go("Snapshotting"));
  // @ts-expect-error Intent → Transferring is not the forward step
  illegal(() => reach("Intent").go("Transferring"));
  // @ts-expect-error Intent → Restoring is not the forward step
  illegal(() => reach("Intent").go("Restoring"));
  // @ts-expect-error Intent → CutOver is not the forward step
  illegal(() => reach("Intent").go("CutOver"));
  // @ts-expect-error Intent → Cleanup is not the forward step
  illegal(() => reach("Intent").go("Cleanup"));
});

Deno.test("Draining: only the forward step to Quiescent compiles; every other target is a type error", () => {
  assert.equal(reach("Draining").go("Quiescent").phase, "Quiescent");
  // @ts-expect-error Draining → Stable is not the forward step
  illegal(() => reach("Draining").go("Stable"));
  // @ts-expect-error Draining → Intent is not the forward step
  illegal(() => reach("Draining").go("Intent"));
  // @ts-expect-error Draining → Draining is not the forward step
  illegal(() => reach("Draining").go("Draining"));
  // @ts-expect-error Draining → Snapshotting is not the forward step
  illegal(() => reach("Draining").go("Snapshotting"));
  // @ts-expect-error Draining → Transferring is not the forward step
  illegal(() => reach("Draining").go("Transferring"));
  // @ts-expect-error Draining → Restoring is not the forward step
  illegal(() => reach("Draining").go("Restoring"));
  // @ts-expect-error Draining → CutOver is not the forward step
  illegal(() => reach("Draining").go("CutOver"));
  // @ts-expect-error Draining → Cleanup is not the forward step
  illegal(() => reach("Draining").go("Cleanup"));
});

Deno.test("Quiescent: only the forward step to Snapshotting compiles; every other target is a type error", () => {
  assert.equal(reach("Quiescent").go("Snapshotting").phase, "Snapshotting");
  // @ts-expect-error Quiescent → Stable is not the forward step
  illegal(() => reach("Quiescent").go("Stable"));
  // @ts-expect-error Quiescent → Intent is not the forward step
  illegal(() => reach("Quiescent").go("Intent"));
  // @ts-expect-error Quiescent → Draining is not the forward step
  illegal(() => reach("Quiescent").go("Draining"));
  // @ts-expect-error Quiescent → Quiescent is not the forward step
  illegal(() => reach("Quiescent").go("Quiescent"));
  // @ts-expect-error Quiescent → Transferring is not the forward step
  illegal(() => reach("Quiescent").go("Transferring"));
  // @ts-expect-error Quiescent → Restoring is not the forward step
  illegal(() => reach("Quiescent").go("Restoring"));
  // @ts-expect-error Quiescent → CutOver is not the forward step
  illegal(() => reach("Quiescent").go("CutOver"));
  // @ts-expect-error Quiescent → Cleanup is not the forward step
  illegal(() => reach("Quiescent").go("Cleanup"));
});

Deno.test("Snapshotting: only the forward step to Transferring compiles; every other target is a type error", () => {
  assert.equal(reach("Snapshotting").go("Transferring").phase, "Transferring");
  // @ts-expect-error Snapshotting → Stable is not the forward step
  illegal(() => reach("Snapshotting").go("Stable"));
  // @ts-expect-error Snapshotting → Intent is not the forward step
  illegal(() => reach("Snapshotting").go("Intent"));
  // @ts-expect-error Snapshotting → Draining is not the forward step
  illegal(() => reach("Snapshotting").go("Draining"));
  // @ts-expect-error Snapshotting → Quiescent is not the forward step
  illegal(() => reach("Snapshotting").go("Quiescent"));
  // @ts-expect-error Snapshotting → Snapshotting is not the forward step
  illegal(() => reach("Snapshotting").go("Snapshotting"));
  // @ts-expect-error Snapshotting → Restoring is not the forward step
  illegal(() => reach("Snapshotting").go("Restoring"));
  // @ts-expect-error Snapshotting → CutOver is not the forward step
  illegal(() => reach("Snapshotting").go("CutOver"));
  // @ts-expect-error Snapshotting → Cleanup is not the forward step
  illegal(() => reach("Snapshotting").go("Cleanup"));
});

Deno.test("Transferring: only the forward step to Restoring compiles; every other target is a type error", () => {
  assert.equal(reach("Transferring").go("Restoring").phase, "Restoring");
  // @ts-expect-error Transferring → Stable is not the forward step
  illegal(() => reach("Transferring").go("Stable"));
  // @ts-expect-error Transferring → Intent is not the forward step
  illegal(() => reach("Transferring").go("Intent"));
  // @ts-expect-error Transferring → Draining is not the forward step
  illegal(() => reach("Transferring").go("Draining"));
  // @ts-expect-error Transferring → Quiescent is not the forward step
  illegal(() => reach("Transferring").go("Quiescent"));
  // @ts-expect-error Transferring → Snapshotting is not the forward step
  illegal(() => reach("Transferring").go("Snapshotting"));
  // @ts-expect-error Transferring → Transferring is not the forward step
  illegal(() => reach("Transferring").go("Transferring"));
  // @ts-expect-error Transferring → CutOver is not the forward step
  illegal(() => reach("Transferring").go("CutOver"));
  // @ts-expect-error Transferring → Cleanup is not the forward step
  illegal(() => reach("Transferring").go("Cleanup"));
});

Deno.test("Restoring: only the forward step to CutOver compiles; every other target is a type error", () => {
  assert.equal(reach("Restoring").go("CutOver").phase, "CutOver");
  // @ts-expect-error Restoring → Stable is not the forward step
  illegal(() => reach("Restoring").go("Stable"));
  // @ts-expect-error Restoring → Intent is not the forward step
  illegal(() => reach("Restoring").go("Intent"));
  // @ts-expect-error Restoring → Draining is not the forward step
  illegal(() => reach("Restoring").go("Draining"));
  // @ts-expect-error Restoring → Quiescent is not the forward step
  illegal(() => reach("Restoring").go("Quiescent"));
  // @ts-expect-error Restoring → Snapshotting is not the forward step
  illegal(() => reach("Restoring").go("Snapshotting"));
  // @ts-expect-error Restoring → Transferring is not the forward step
  illegal(() => reach("Restoring").go("Transferring"));
  // @ts-expect-error Restoring → Restoring is not the forward step
  illegal(() => reach("Restoring").go("Restoring"));
  // @ts-expect-error Restoring → Cleanup is not the forward step
  illegal(() => reach("Restoring").go("Cleanup"));
});

Deno.test("CutOver: only the forward step to Cleanup compiles; every other target is a type error", () => {
  assert.equal(reach("CutOver").go("Cleanup").phase, "Cleanup");
  // @ts-expect-error CutOver → Stable is not the forward step
  illegal(() => reach("CutOver").go("Stable"));
  // @ts-expect-error CutOver → Intent is not the forward step
  illegal(() => reach("CutOver").go("Intent"));
  // @ts-expect-error CutOver → Draining is not the forward step
  illegal(() => reach("CutOver").go("Draining"));
  // @ts-expect-error CutOver → Quiescent is not the forward step
  illegal(() => reach("CutOver").go("Quiescent"));
  // @ts-expect-error CutOver → Snapshotting is not the forward step
  illegal(() => reach("CutOver").go("Snapshotting"));
  // @ts-expect-error CutOver → Transferring is not the forward step
  illegal(() => reach("CutOver").go("Transferring"));
  // @ts-expect-error CutOver → Restoring is not the forward step
  illegal(() => reach("CutOver").go("Restoring"));
  // @ts-expect-error CutOver → CutOver is not the forward step
  illegal(() => reach("CutOver").go("CutOver"));
});

Deno.test("Cleanup: only the forward step to Stable compiles; every other target is a type error", () => {
  assert.equal(reach("Cleanup").go("Stable").phase, "Stable");
  // @ts-expect-error Cleanup → Intent is not the forward step
  illegal(() => reach("Cleanup").go("Intent"));
  // @ts-expect-error Cleanup → Draining is not the forward step
  illegal(() => reach("Cleanup").go("Draining"));
  // @ts-expect-error Cleanup → Quiescent is not the forward step
  illegal(() => reach("Cleanup").go("Quiescent"));
  // @ts-expect-error Cleanup → Snapshotting is not the forward step
  illegal(() => reach("Cleanup").go("Snapshotting"));
  // @ts-expect-error Cleanup → Transferring is not the forward step
  illegal(() => reach("Cleanup").go("Transferring"));
  // @ts-expect-error Cleanup → Restoring is not the forward step
  illegal(() => reach("Cleanup").go("Restoring"));
  // @ts-expect-error Cleanup → CutOver is not the forward step
  illegal(() => reach("Cleanup").go("CutOver"));
  // @ts-expect-error Cleanup → Cleanup is not the forward step
  illegal(() => reach("Cleanup").go("Cleanup"));
});

Deno.test("abort compiles only on Intent, Draining and Quiescent", () => {
  // @ts-expect-error Stable has no abort
  illegal(() => reach("Stable").abort("operator"));
  assert.equal(reach("Intent").abort("operator").phase, "Stable");
  assert.equal(reach("Draining").abort("operator").phase, "Stable");
  assert.equal(reach("Quiescent").abort("operator").phase, "Stable");
  // @ts-expect-error Snapshotting has no abort
  illegal(() => reach("Snapshotting").abort("operator"));
  // @ts-expect-error Transferring has no abort
  illegal(() => reach("Transferring").abort("operator"));
  // @ts-expect-error Restoring has no abort
  illegal(() => reach("Restoring").abort("operator"));
  // @ts-expect-error CutOver has no abort
  illegal(() => reach("CutOver").abort("operator"));
  // @ts-expect-error Cleanup has no abort
  illegal(() => reach("Cleanup").abort("operator"));
});

Deno.test("resumeOnSource compiles only on Snapshotting, Transferring and Restoring", () => {
  // @ts-expect-error Stable has no resumeOnSource
  illegal(() => reach("Stable").resumeOnSource("transfer-failed"));
  // @ts-expect-error Intent has no resumeOnSource
  illegal(() => reach("Intent").resumeOnSource("transfer-failed"));
  // @ts-expect-error Draining has no resumeOnSource
  illegal(() => reach("Draining").resumeOnSource("transfer-failed"));
  // @ts-expect-error Quiescent has no resumeOnSource
  illegal(() => reach("Quiescent").resumeOnSource("transfer-failed"));
  assert.equal(reach("Snapshotting").resumeOnSource("transfer-failed").phase, "Stable");
  assert.equal(reach("Transferring").resumeOnSource("transfer-failed").phase, "Stable");
  assert.equal(reach("Restoring").resumeOnSource("transfer-failed").phase, "Stable");
  // @ts-expect-error CutOver has no resumeOnSource
  illegal(() => reach("CutOver").resumeOnSource("transfer-failed"));
  // @ts-expect-error Cleanup has no resumeOnSource
  illegal(() => reach("Cleanup").resumeOnSource("transfer-failed"));
});
