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

const tick = () => new Promise<void>((r) => setTimeout(r, 0));

Deno.test("take() starts each delivery in order and returns while it is still in acceptance", async () => {
  const d = heldDeliveries();
  const intake = new CommandIntake(d.deliver, memoryLogger().logger);
  await intake.take("a");
  await intake.take("b");
  await intake.take("c");
  await tick();
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
  await tick();
  assert.equal(third, false);
  assert.deepEqual(d.started, ["a", "b"], "the third is not started while two are in acceptance");
  d.ok("b");
  await t;
  await tick();
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
    await tick();
    d.fail("a", new Error("journal write failed"));
    await new Promise((r) => setTimeout(r, 0));
    assert.ok(lines.some((l) => l.msg === "delivering a command failed" && l.err === "journal write failed"));
    await assert.rejects(intake.take("b"), /journal write failed/);
    await tick();
    assert.deepEqual(d.started, ["a"], "nothing started after the failure surfaced");
    await intake.take("b");
    await tick();
    d.ok("b");
    await intake.settled();
  });
  await t.step("from settled()", async () => {
    const d = heldDeliveries();
    const intake = new CommandIntake(d.deliver, memoryLogger().logger);
    await intake.take("a");
    const s = intake.settled();
    await tick();
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

Deno.test("deliveries taken a few promise-job turns apart start together, in one turn, in the order taken", async () => {
  // A promise-job turn counter: each turn of the queue advances it by one, for 200 turns (then timers may run).
  let turn = 0;
  const ticker = (async () => {
    for (let i = 0; i < 200; i++) {
      await null;
      turn++;
    }
  })();
  const startedAt = new Map<string, number>();
  const d = heldDeliveries();
  const intake = new CommandIntake((c: string) => {
    startedAt.set(c, turn);
    return d.deliver(c);
  }, memoryLogger().logger);
  await intake.take("a");
  assert.deepEqual(d.started, [], "a waits for the frames read right behind it");
  for (let i = 0; i < 4; i++) await null; // the session reads and decodes the next frame
  await intake.take("b");
  await ticker;
  await tick();
  assert.deepEqual(d.started, ["a", "b"]);
  assert.ok(
    startedAt.get("b")! - startedAt.get("a")! <= 1,
    `a started at turn ${startedAt.get("a")}, b at ${startedAt.get("b")}: in step, so their checks batch`,
  );
  d.ok("a");
  d.ok("b");
  await intake.settled();
});
