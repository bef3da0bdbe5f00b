import assert from "node:assert/strict";
import { join } from "node:path";
import { parseStepHook, StepHook, StepHookUsage } from "./step_hook.ts";

Deno.test("parseStepHook() reads each step with each action, a path with colons, and nothing without the variable", () => {
  assert.equal(parseStepHook(undefined), null);
  for (const step of ["checked", "spawned", "ready", "commit"]) {
    assert.deepEqual(parseStepHook(`${step}:exit`), { step, action: "exit" });
    assert.deepEqual(parseStepHook(`${step}:pause:/tmp/a:b:c`), { step, action: "pause", path: "/tmp/a:b:c" });
  }
});

Deno.test("parseStepHook() refuses a value that names no step or action", () => {
  for (
    const v of ["", "checked", "booted:exit", "checked:", "checked:pause", "checked:pause:", "checked:stop", "exit"]
  ) {
    assert.throws(() => parseStepHook(v), StepHookUsage, v);
  }
});

Deno.test("a pause does nothing at another step, creates its file with the step's name at its own, and waits until it is gone", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "pause");
    let waited = "";
    const hook = new StepHook({ step: "ready", action: "pause", path }, {
      exit: () => {
        throw new Error("no exit");
      },
      waitGone: async (p) => {
        waited = await Deno.readTextFile(p);
        await Deno.remove(p);
      },
    });
    assert.equal(await hook.at("checked"), 0);
    await assert.rejects(Deno.stat(path), Deno.errors.NotFound);
    const ms = await hook.at("ready");
    assert.equal(waited, "ready");
    assert.ok(ms >= 0);
    await Deno.writeTextFile(path, "already");
    await assert.rejects(hook.at("ready"), Deno.errors.AlreadyExists, "a file that is there already fails the pause");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("exit exits with status 5 at its step only", async () => {
  const exits: number[] = [];
  const hook = new StepHook({ step: "spawned", action: "exit" }, {
    exit: (s) => {
      exits.push(s);
      throw new Error("exited");
    },
    waitGone: () => Promise.resolve(),
  });
  assert.equal(await hook.at("checked"), 0);
  await assert.rejects(hook.at("spawned"), /exited/);
  assert.deepEqual(exits, [5]);
});
