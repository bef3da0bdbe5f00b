import assert from "node:assert/strict";
import { memoryLogger, silentLogger } from "../log/mod.ts";
import { ConditionSet } from "./conditions.ts";
import { type ApplyOutcome, ConvergenceEngine, type SectionConverger, TerminalSectionError } from "./engine.ts";
import { ConvergeLoop, DRIFT_INTERVAL_MS, RETRY_INTERVAL_MS } from "./loop.ts";
import { SECTION_FIELD_NUMBER, SECTION_ORDER, type SectionName } from "./section.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";

type Behaviour = ApplyOutcome | "throw" | "terminal-throw" | "nothing-to-do";

/** A fake section: desired is a number, observed is the last applied number; plan is the difference. */
class FakeSection implements SectionConverger<number, number, number> {
  observed = 0;
  applies = 0;
  constructor(readonly section: SectionName, public behaviour: Behaviour, readonly calls: string[]) {}
  observe(): Promise<number> {
    this.calls.push(`observe:${this.section}`);
    return Promise.resolve(this.observed);
  }
  plan(desired: number | undefined, observed: number): number[] {
    if (this.behaviour === "nothing-to-do") return [];
    return (desired ?? 0) === observed ? [] : [desired ?? 0];
  }
  apply(actions: readonly number[]): Promise<ApplyOutcome> {
    this.calls.push(`apply:${this.section}`);
    this.applies++;
    if (this.behaviour === "throw") return Promise.reject(new Error("disk full"));
    if (this.behaviour === "terminal-throw") return Promise.reject(new TerminalSectionError("overlap", "GPU held"));
    if (this.behaviour === "nothing-to-do") return Promise.resolve({ kind: "converged" });
    if (this.behaviour.kind === "converged") this.observed = actions[0]!;
    return Promise.resolve(this.behaviour);
  }
}

function engine(sections: FakeSection[], conditions?: ConditionSet) {
  return new ConvergenceEngine({ convergers: sections, log: silentLogger(), conditions });
}

const CONVERGED: ApplyOutcome = { kind: "converged" };
const PROGRESSING: ApplyOutcome = { kind: "progressing", reason: "ImagesWarming", message: "2 of 3" };
const FAILED: ApplyOutcome = { kind: "failed", reason: "overlap", message: "GPU-1 held by a-2" };
const EXTERNAL: ApplyOutcome = {
  kind: "unsupported",
  reason: "HostManagedExternally",
  message: "[host] units = false",
  condition: false,
};

Deno.test("sections converge in the seed's order whatever order the convergers were given in", async () => {
  const calls: string[] = [];
  const secs = [...SECTION_ORDER].reverse().map((s) => new FakeSection(s, CONVERGED, calls));
  const e = engine(secs);
  e.hold({ generation: 1, specHash: "h1", sections: Object.fromEntries(SECTION_ORDER.map((s) => [s, 1])) });
  await e.pass();
  assert.deepEqual(calls.filter((c) => c.startsWith("apply:")), SECTION_ORDER.map((s) => `apply:${s}`));
});

Deno.test("the observed_generation rule, one row per case", async (t) => {
  const rows: {
    name: string;
    devices: Behaviour | "no-converger";
    desired: unknown;
    state: string;
    reason: string;
    advances: boolean;
    condition: string | undefined;
  }[] = [
    {
      name: "converged",
      devices: CONVERGED,
      desired: 3,
      state: "CONVERGED",
      reason: "",
      advances: true,
      condition: undefined,
    },
    {
      name: "retryable failure stays PROGRESSING",
      devices: PROGRESSING,
      desired: 3,
      state: "PROGRESSING",
      reason: "ImagesWarming",
      advances: false,
      condition: undefined,
    },
    {
      name: "terminal failure counts",
      devices: FAILED,
      desired: 3,
      state: "FAILED",
      reason: "overlap",
      advances: true,
      condition: undefined,
    },
    {
      name: "an exception is retryable",
      devices: "throw",
      desired: 3,
      state: "PROGRESSING",
      reason: "ApplyError",
      advances: false,
      condition: undefined,
    },
    {
      name: "a TerminalSectionError is terminal",
      devices: "terminal-throw",
      desired: 3,
      state: "FAILED",
      reason: "overlap",
      advances: true,
      condition: undefined,
    },
    {
      name: "no converger, empty section: trivially converged",
      devices: "no-converger",
      desired: { assignments: [] },
      state: "CONVERGED",
      reason: "",
      advances: true,
      condition: undefined,
    },
    {
      name: "no converger, non-empty section: UNSUPPORTED with the field number, terminal",
      devices: "no-converger",
      desired: { assignments: [{ allocation_id: "a" }] },
      state: "UNSUPPORTED",
      reason: String(SECTION_FIELD_NUMBER.devices),
      advances: true,
      condition: String(SECTION_FIELD_NUMBER.devices),
    },
    {
      name: "unsupported without a condition (HostManagedExternally)",
      devices: EXTERNAL,
      desired: 3,
      state: "UNSUPPORTED",
      reason: "HostManagedExternally",
      advances: true,
      condition: undefined,
    },
  ];
  for (const row of rows) {
    await t.step(row.name, async () => {
      const calls: string[] = [];
      const secs = [new FakeSection("host", CONVERGED, calls)];
      if (row.devices !== "no-converger") secs.push(new FakeSection("devices", row.devices, calls));
      const e = engine(secs);
      e.hold({ generation: 4, specHash: "h4", sections: { host: 1, devices: row.desired } });
      const s = await e.pass();
      const dev = s.sections.find((x) => x.section === "devices")!;
      assert.equal(dev.state, row.state);
      assert.equal(dev.reason, row.reason);
      assert.equal(dev.generation, 4);
      assert.equal(s.observed_generation, row.advances ? 4 : 0);
      assert.equal(s.applied_generation, 4);
      assert.equal(s.applied_spec_hash, "h4");
      const c = s.conditions.find((x) => x.type === "SectionUnsupported" && x.subject === "devices");
      assert.equal(c?.reason, row.condition);
      assert.equal(s.sections.length, SECTION_ORDER.length);
    });
  }
});

Deno.test("observed_generation never moves backwards and advances once a retry succeeds", async () => {
  const calls: string[] = [];
  const dev = new FakeSection("devices", CONVERGED, calls);
  const e = engine([dev]);
  e.hold({ generation: 5, specHash: "h5", sections: { devices: 1 } });
  assert.equal((await e.pass()).observed_generation, 5);
  dev.behaviour = PROGRESSING;
  e.hold({ generation: 6, specHash: "h6", sections: { devices: 2 } });
  const s6 = await e.pass();
  assert.equal(s6.observed_generation, 5);
  assert.equal(s6.applied_generation, 6);
  dev.behaviour = CONVERGED;
  assert.equal((await e.pass()).observed_generation, 6);
});

Deno.test("a converged section plans nothing, so a second pass applies nothing", async () => {
  const calls: string[] = [];
  const dev = new FakeSection("devices", CONVERGED, calls);
  const e = engine([dev]);
  e.hold({ generation: 1, specHash: "h", sections: { devices: 7 } });
  await e.pass();
  await e.pass();
  assert.equal(dev.applies, 1);
  assert.equal(e.passes, 2);
});

Deno.test("the SectionUnsupported condition clears once the section is emptied", async () => {
  const e = engine([]);
  e.hold({ generation: 1, specHash: "a", sections: { telemetry: { endpoint: "https://otlp" } } });
  assert.ok((await e.pass()).conditions.some((c) => c.type === "SectionUnsupported" && c.subject === "telemetry"));
  e.hold({ generation: 2, specHash: "b", sections: { telemetry: {} } });
  const s = await e.pass();
  assert.ok(!s.conditions.some((c) => c.type === "SectionUnsupported"));
  assert.equal(s.observed_generation, 2);
});

Deno.test("conditions report their age on the monotonic clock, not a timestamp", () => {
  let now = 1_000;
  const c = new ConditionSet({ monotonic: () => now });
  c.set("XidError", "GPU-1", "True", "63", "row remap pending");
  now = 4_500;
  c.set("XidError", "GPU-1", "True", "63", "still pending");
  assert.deepEqual(c.report(), [{
    type: "XidError",
    subject: "GPU-1",
    status: "True",
    reason: "63",
    message: "still pending",
    age_ms: 3_500,
  }]);
  c.set("XidError", "GPU-1", "True", "79", "fell off the bus");
  assert.equal(c.report()[0]!.age_ms, 0);
  c.set("XidError", "GPU-2", "True", "63", "");
  c.clearType("XidError", "GPU-1");
  assert.deepEqual(c.report().map((x) => x.subject), ["GPU-2"]);
});

Deno.test("passes run on every spec, on the 10-minute drift timer, and after 30 s while progressing", async () => {
  const clock = new FakeClock();
  const calls: string[] = [];
  const dev = new FakeSection("devices", CONVERGED, calls);
  const e = engine([dev]);
  const reports: number[] = [];
  const loop = new ConvergeLoop(e, { clock, onStatus: (s) => reports.push(s.observed_generation) });
  assert.equal(await loop.tick(), undefined, "no spec, no pass");
  await loop.onSpec({ generation: 1, specHash: "h", sections: { devices: 1 } });
  assert.equal(e.passes, 1);
  await clock.advance(DRIFT_INTERVAL_MS - 1);
  assert.equal(await loop.tick(), undefined);
  await clock.advance(1);
  assert.ok(await loop.tick());
  assert.equal(e.passes, 2);
  dev.behaviour = PROGRESSING;
  await loop.onSpec({ generation: 2, specHash: "h2", sections: { devices: 2 } });
  await clock.advance(RETRY_INTERVAL_MS - 1);
  assert.equal(await loop.tick(), undefined);
  await clock.advance(1);
  dev.behaviour = CONVERGED;
  assert.equal((await loop.tick())?.observed_generation, 2);
  assert.deepEqual(reports, [1, 1, 1, 2]);
});

Deno.test("concurrent pass requests never overlap", async () => {
  let inFlight = 0;
  let maxInFlight = 0;
  const slow: SectionConverger<number, number, number> = {
    section: "instances",
    observe: () => Promise.resolve(0),
    plan: () => [1],
    apply: async () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 1));
      inFlight--;
      return { kind: "converged" };
    },
  };
  const e = new ConvergenceEngine({ convergers: [slow], log: silentLogger() });
  e.hold({ generation: 1, specHash: "h", sections: { instances: 1 } });
  await Promise.all([e.pass(), e.pass(), e.pass()]);
  assert.equal(maxInFlight, 1);
  assert.equal(e.passes, 3);
});

Deno.test("a NodeSpec section number bcd does not know is UNSUPPORTED with the field number; an empty one converges", async () => {
  const e = engine([new FakeSection("devices", CONVERGED, [])]);
  e.hold({
    generation: 3,
    specHash: "h3",
    sections: { devices: 1 },
    unknownSections: [{ field: 12, empty: true }, { field: 9, empty: false }],
  });
  const s = await e.pass();
  const unknown = s.sections.filter((x) => !(SECTION_ORDER as readonly string[]).includes(x.section));
  assert.deepEqual(unknown.map((x) => [x.section, x.state, x.reason, x.generation]), [
    ["9", "UNSUPPORTED", "9", 3],
    ["12", "CONVERGED", "", 3],
  ]);
  assert.equal(s.observed_generation, 3, "UNSUPPORTED is terminal: the rest of the spec still converges");
  const c = s.conditions.filter((x) => x.type === "SectionUnsupported");
  assert.deepEqual(c.map((x) => [x.subject, x.status, x.reason]), [["9", "True", "9"]]);
  e.hold({ generation: 4, specHash: "h4", sections: { devices: 1 } });
  const s4 = await e.pass();
  assert.equal(s4.sections.length, SECTION_ORDER.length);
  assert.ok(!s4.conditions.some((x) => x.type === "SectionUnsupported"), "its condition clears once it is gone");
});

Deno.test("a section's logger carries the pass's generation and follows the engine logger's level", async () => {
  const { logger, lines } = memoryLogger("info");
  const logging: SectionConverger<number, number, number> = {
    section: "host",
    observe: (ctx) => (ctx.log.debug({ step: "observe" }, "observing"), Promise.resolve(0)),
    plan: () => [],
    apply: () => Promise.resolve(CONVERGED),
  };
  const e = new ConvergenceEngine({ convergers: [logging], log: logger });
  e.hold({ generation: 1, specHash: "a", sections: { host: 1 } });
  await e.pass();
  assert.equal(lines.filter((l) => l.step === "observe").length, 0, "debug is below the engine logger's level");
  logger.level = "debug";
  await e.pass();
  e.hold({ generation: 2, specHash: "b", sections: { host: 1 } });
  await e.pass();
  const seen = lines.filter((l) => l.step === "observe").map((l) => [l.section, l.generation]);
  assert.deepEqual(seen, [["host", 1], ["host", 2]]);
});
