// The turn-vs-drain chaos campaign of seed 001 (`deno task test:chaos`): BCD_CHAOS_SEEDS seeded interleavings
// (default 10,000) of a drain dropped at random offsets across a stream of turns, each asserting that every
// attempted turn runs exactly once, that DrainAck's in_flight is the turn running at the drain instant, and that
// no turn starts while the gate is closed. A failure names its seed; BCD_CHAOS_SEED=N reruns one with a trace.
// Not named *_test.ts, so the plain `deno task test` run leaves the campaign to its own task. The task runs with
// --allow-all like the other test tasks: the simulation touches nothing, but pino (loaded through core/log) reads
// env and sys.
import assert from "node:assert/strict";
import { ChaosViolation, runChaosSeed } from "./chaos_sim.ts";

const SEEDS = Number(Deno.env.get("BCD_CHAOS_SEEDS") ?? "10000");
const ONE = Deno.env.get("BCD_CHAOS_SEED");

Deno.test(`turn-vs-drain chaos: ${ONE === undefined ? `${SEEDS} seeds` : `seed ${ONE}`}`, () => {
  if (ONE !== undefined) {
    runChaosSeed(Number(ONE), undefined, (l) => console.log(l));
    return;
  }
  assert.ok(Number.isSafeInteger(SEEDS) && SEEDS >= 1, `BCD_CHAOS_SEEDS must be a positive integer, got ${SEEDS}`);
  const totals = { turns: 0, drains: 0, quiescent: 0, aborted: 0, migrated: 0, resumedOnSource: 0, ackedInFlight: 0 };
  const failures: string[] = [];
  for (let seed = 1; seed <= SEEDS; seed++) {
    try {
      const o = runChaosSeed(seed);
      for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += o[k];
    } catch (e) {
      if (!(e instanceof ChaosViolation)) throw e;
      failures.push(e.message);
      console.error(`chaos FAILED ${e.message} (rerun: BCD_CHAOS_SEED=${seed} deno task test:chaos)`);
    }
  }
  console.log(`chaos: ${SEEDS} seeds, ${failures.length} failed; ${JSON.stringify(totals)}`);
  assert.deepEqual(failures, [], `${failures.length} of ${SEEDS} seeds failed; first: ${failures[0]}`);
  // The campaign must reach every path it claims to cover.
  for (const k of ["ackedInFlight", "aborted", "migrated", "resumedOnSource"] as const) {
    assert.ok(totals[k] > 0, `no seed reached ${k}`);
  }
});
