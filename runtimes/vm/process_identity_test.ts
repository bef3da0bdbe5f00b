import assert from "node:assert/strict";
import { identify, isAlive, parseProcStat } from "./process_identity.ts";

Deno.test("parseProcStat() takes the state and start time after the command, whatever the command holds", () => {
  const rest = "S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 123456 20";
  assert.deepEqual(parseProcStat(`42 (a) b (c)) ${rest}`), { state: "S", startTime: "123456" });
  assert.throws(() => parseProcStat("42 no parenthesis"), RangeError);
});

Deno.test("a process's identity holds while it runs and not once it ended, nor for another start time", async () => {
  const child = new Deno.Command("sleep", { args: ["60"] }).spawn();
  const id = await identify(child.pid);
  assert.ok(id !== null);
  assert.ok(await isAlive(id));
  assert.equal(await isAlive({ pid: id.pid, startTime: String(Number(id.startTime) + 1) }), false);
  child.kill("SIGKILL");
  await child.status;
  assert.equal(await isAlive(id), false);
});
