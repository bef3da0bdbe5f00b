import assert from "node:assert/strict";
import { memoryLogger } from "../log/mod.ts";
import { CommandIntake } from "./command_intake.ts";

/** Deliveries the test answers by hand, in the order they started. */
function heldDeliveries() {
  const started: string[] = [];
  const answer = new Map<string, { ok: () => void; fail: (e: Error) => void }>();
  return {
    started,
    deliver: (c: string) =>
      new Promise<void>((ok, fail) => {
        started.push(c);
        answer.set(c, { ok, fail });
      }),
    ok: (c: string) => answer.get(c)!.ok(),
    fail: (c: string, e: Error) => answer.get(c)!.fail(e),
  };
}

Deno.test("take() starts each delivery in order and returns while it is still in acceptance", async () => {
  const d = heldDeliveries();
  const intake = new CommandIntake(d.deliver, memoryLogger().logger);
  await intake.take("a");
  await intake.take("b");
  await intake.take("c");
  assert.deepEqual(d.started, ["a", "b", "c"], "all three started, none answered");
  assert.equal(intake.inFlight, 3);
  let settled = false;
  const s = intake.settled().then(() => settled = true);
  d.ok("a");
  d.ok("c");
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(settled, false, "settled() waits for every delivery started");
  d.ok("b");
  await s;
  assert.equal(intake.inFlight, 0);
});

Deno.test("at most max deliveries are in acceptance: the next take() waits for one to be answered", async () => {
  const d = heldDeliveries();
  const intake = new CommandIntake(d.deliver, memoryLogger().logger, 2);
  await intake.take("a");
  await intake.take("b");
  let third = false;
  const t = intake.take("c").then(() => third = true);
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(third, false);
  assert.deepEqual(d.started, ["a", "b"], "the third is not started while two are in acceptance");
  d.ok("b");
  await t;
  assert.deepEqual(d.started, ["a", "b", "c"]);
  d.ok("a");
  d.ok("c");
  await intake.settled();
});

Deno.test("a failed delivery is logged at once and thrown from the next take() or settled(), once", async (t) => {
  await t.step("from the next take()", async () => {
    const d = heldDeliveries();
    const { logger, lines } = memoryLogger();
    const intake = new CommandIntake(d.deliver, logger);
    await intake.take("a");
    d.fail("a", new Error("journal write failed"));
    await new Promise((r) => setTimeout(r, 0));
    assert.ok(lines.some((l) => l.msg === "delivering a command failed" && l.err === "journal write failed"));
    await assert.rejects(intake.take("b"), /journal write failed/);
    assert.deepEqual(d.started, ["a"], "nothing started after the failure surfaced");
    await intake.take("b");
    d.ok("b");
    await intake.settled();
  });
  await t.step("from settled()", async () => {
    const d = heldDeliveries();
    const intake = new CommandIntake(d.deliver, memoryLogger().logger);
    await intake.take("a");
    const s = intake.settled();
    d.fail("a", new Error("stopped"));
    await assert.rejects(s, /stopped/);
    await intake.settled();
  });
});

Deno.test("the bound must be a positive integer", () => {
  for (const max of [0, -1, 1.5, NaN]) {
    assert.throws(() => new CommandIntake(() => Promise.resolve(), memoryLogger().logger, max), RangeError);
  }
});
