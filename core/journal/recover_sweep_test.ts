import assert from "node:assert/strict";
import { openTest, tempDataDir, testClock } from "./journal_testing.ts";
import { RETENTION_MS } from "./sweep.ts";
import { TicketReplayed, TicketsFull } from "./errors.ts";

const K = {
  reboot: { kind: "node.reboot", retrySafe: true, selfTerminating: true },
  kexec: { kind: "boot.kexec", retrySafe: false, selfTerminating: true },
  inv: { kind: "inventory.refresh", retrySafe: true, selfTerminating: false },
  reset: { kind: "gpu.reset", retrySafe: false, selfTerminating: false },
};

Deno.test("recover() settles rebooted and interrupted for the next Hello; retry-safe entries wait", async () => {
  await using tmp = await tempDataDir();
  const clock = testClock();
  const j = await openTest(tmp.dir, clock, { incarnation: "i1", bootId: "b1" });
  await j.accept("reboot", K.reboot);
  await j.markRunning("reboot");
  await j.accept("kexec", K.kexec);
  await j.markRunning("kexec");
  await j.accept("inv", K.inv);
  await j.accept("reset", K.reset);
  await j.accept("old-done", K.inv);
  await j.finish("old-done", { state: "SUCCEEDED" });
  await j.accept("acked", K.inv);
  await j.finish("acked", { state: "SUCCEEDED" });
  assert.equal(await j.ackResults(["acked", "unknown-id"]), 1);
  await j.close();

  const j2 = await openTest(tmp.dir, clock, { incarnation: "i2", bootId: "b2" });
  const rep = await j2.recover();
  const settled = Object.fromEntries(rep.settled.map((e) => [e.id, e.result]));
  assert.deepEqual(Object.keys(settled).sort(), ["kexec", "reboot", "reset"]);
  assert.deepEqual(settled.reboot, { state: "SUCCEEDED", bootId: "b2", rebooted: true, previousBootId: "b1" });
  assert.equal(settled.kexec?.state, "SUCCEEDED", "a running self-terminating kind from an earlier boot rebooted");
  assert.deepEqual([settled.reset?.state, settled.reset?.code], ["FAILED", "interrupted"]);
  assert.deepEqual(rep.waiting.map((e) => e.id), ["inv"]);
  assert.deepEqual(rep.unackedResults.map((e) => e.id).sort(), ["kexec", "old-done", "reboot", "reset"]);
  await j2.ackResults(rep.unackedResults.map((e) => e.id));
  assert.deepEqual(await j2.unackedResults(), []);
  const r = await j2.resolve("inv", K.inv);
  assert.equal(r.action, "reexecute");
  assert.equal((await j2.accept("inv", K.inv)).incarnation, "i2", "re-accepted by this process");
  await j2.close();
});

Deno.test("sweep() deletes done and orphaned entries older than 7 days, never the running process's", async () => {
  await using tmp = await tempDataDir();
  const clock = testClock();
  const j = await openTest(tmp.dir, clock, { incarnation: "old" });
  await j.accept("orphan", K.inv);
  await j.accept("done-old", K.inv);
  await j.finish("done-old", { state: "SUCCEEDED" });
  await j.close();
  await clock.advance(60_000);
  const j2 = await openTest(tmp.dir, clock, { incarnation: "now" });
  await j2.accept("mine", K.inv);
  await j2.accept("done-new", K.inv);
  await j2.finish("done-new", { state: "SUCCEEDED" });
  await clock.advance(RETENTION_MS - 60_000);
  assert.deepEqual(await j2.sweep(), { done: 0, orphaned: 0, tickets: 0 }, "exactly 7 days old is kept");
  await clock.advance(1);
  assert.deepEqual(await j2.sweep(), { done: 1, orphaned: 1, tickets: 0 });
  await clock.advance(RETENTION_MS);
  assert.deepEqual(await j2.sweep(), { done: 1, orphaned: 0, tickets: 0 });
  assert.equal((await j2.get("mine"))?.state, "accepted", "the running process's entry stays");
  await j2.close();
});

Deno.test("exec tickets: a used jti is refused until it expires; a full set refuses new tickets", async () => {
  await using tmp = await tempDataDir();
  const clock = testClock();
  const j = await openTest(tmp.dir, clock, { maxExecTickets: 3 });
  await j.useExecTicket("a", clock.now() + 1000);
  await assert.rejects(() => j.useExecTicket("a", clock.now() + 1000), TicketReplayed);
  await j.useExecTicket("b", clock.now() + 5000);
  await j.useExecTicket("c", clock.now() + 5000);
  await assert.rejects(() => j.useExecTicket("d", clock.now() + 5000), (e: unknown) => e instanceof TicketsFull);
  await clock.advance(1000);
  await j.useExecTicket("d", clock.now() + 5000);
  await assert.rejects(() => j.useExecTicket("a", clock.now() + 5000), TicketsFull, "expired a is forgotten, set full");
  await clock.advance(10_000);
  assert.equal((await j.sweep()).tickets, 3);
  await j.close();
});
