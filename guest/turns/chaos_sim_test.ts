// The chaos simulation itself: a few hundred seeds pass against the real engine, and each invariant is shown to
// catch an engine broken the way it guards against (the full campaign is `deno task test:chaos`).
import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import type { HostMessage } from "../../core/turns/mod.ts";
import { ChaosViolation, runChaosSeed, SIM_CHANNEL_KEY, SIM_VM_ID, type SimEngine } from "./chaos_sim.ts";
import { type ConnId, TurnsEngine } from "./engine.ts";

function _real(now: () => bigint): TurnsEngine {
  return new TurnsEngine({
    vmId: SIM_VM_ID,
    guestdVersion: "0.1.0",
    mode: "native",
    now,
    logger: silentLogger(),
    channelKey: SIM_CHANNEL_KEY,
  });
}

/** Wraps the real engine, letting `handle` intercept host messages. */
function _broken(
  handle: (e: TurnsEngine, conn: ConnId, m: HostMessage, gated: boolean) => ReturnType<TurnsEngine["received"]> | null,
) {
  return (now: () => bigint): SimEngine => {
    const e = _real(now);
    let gated = false;
    return {
      connected: (c) => e.connected(c),
      disconnected: (c) => e.disconnected(c),
      turnExited: (id, code) => e.turnExited(id, code),
      received: (c, m) => {
        const r = handle(e, c, m, gated);
        if (m.type === "DrainRequest") gated = true;
        if (m.type === "DrainCancel") gated = false;
        const out = r ?? e.received(c, m);
        if (out.some((a) => a.kind === "send" && a.msg.type === "Resumed")) gated = false;
        return out;
      },
    };
  };
}

/** The first seed (of 1..n) whose run violates an invariant, with the message. */
function _firstViolation(make: (now: () => bigint) => SimEngine, n = 500): ChaosViolation | null {
  for (let seed = 1; seed <= n; seed++) {
    try {
      runChaosSeed(seed, make);
    } catch (e) {
      if (e instanceof ChaosViolation) return e;
      throw e;
    }
  }
  return null;
}

Deno.test("300 seeded interleavings against the real engine break no invariant", () => {
  let migrated = 0;
  let ackedInFlight = 0;
  for (let seed = 1; seed <= 300; seed++) {
    const o = runChaosSeed(seed);
    migrated += o.migrated;
    ackedInFlight += o.ackedInFlight;
  }
  assert.ok(migrated > 0 && ackedInFlight > 0, "the seeds reach restores and drains with a turn in flight");
});

Deno.test("the same seed replays the same run", () => {
  assert.deepEqual(runChaosSeed(42), runChaosSeed(42));
});

Deno.test("check 2 catches an engine whose DrainAck always says nothing is in flight", () => {
  const v = _firstViolation(_broken((e, c, m) => {
    if (m.type !== "DrainRequest") return null;
    const acts = e.received(c, m);
    return acts.map((
      a,
    ) => (a.kind === "send" && a.msg.type === "DrainAck" ? { ...a, msg: { type: "DrainAck", in_flight: null } } : a));
  }));
  assert.ok(v);
  assert.match(v.message, /^seed \d+: DrainAck in_flight=null but turn \d+ was running/);
});

Deno.test("check 3 catches an engine that acks a drain without closing its gate", () => {
  const v = _firstViolation(_broken((e, c, m) => {
    if (m.type === "DrainRequest") return [{ kind: "send", conn: c, msg: { type: "DrainAck", in_flight: e.inFlight } }];
    if (m.type === "DrainCancel") return [];
    return null;
  }));
  assert.ok(v);
  assert.match(v.message, /started while the gate was closed/);
});

Deno.test("check 1 catches an engine that drops turns arriving behind a closed gate", () => {
  const v = _firstViolation(_broken((_e, _c, m, gated) => (m.type === "RunTurn" && gated ? [] : null)));
  assert.ok(v);
  assert.match(v.message, /turn \d+ ran 0 times/);
});
