import assert from "node:assert/strict";
import { lazyConverger } from "./lazy.ts";
import type { ApplyContext, SectionConverger } from "./engine.ts";
import { ConditionSet } from "./conditions.ts";
import { silentLogger } from "../log/mod.ts";

const ctx: ApplyContext = {
  generation: 1,
  conditions: new ConditionSet(),
  log: silentLogger(),
};

function real(section: "host" | "access" = "host"): SectionConverger<string, string, string> {
  return {
    section,
    observe: (_c, desired) => Promise.resolve(`seen ${desired}`),
    plan: (desired, observed) => [`${observed} -> ${desired}`],
    apply: (actions) => Promise.resolve({ kind: "converged", message: actions.join(",") }),
  };
}

Deno.test("lazyConverger loads its converger on the first observe, once, and delegates to it", async () => {
  let loads = 0;
  const c = lazyConverger("host", () => {
    loads++;
    return Promise.resolve(real());
  });
  assert.equal(c.section, "host");
  assert.equal(loads, 0, "nothing loads before a pass");
  const [a, b] = await Promise.all([c.observe(ctx, "x"), c.observe(ctx, "y")]);
  assert.deepEqual([a, b, loads], ["seen x", "seen y", 1]);
  assert.deepEqual(c.plan("x", "seen x"), ["seen x -> x"]);
  assert.deepEqual(await c.apply(["a", "b"], "x", ctx), { kind: "converged", message: "a,b" });
  await c.observe(ctx, "z");
  assert.equal(loads, 1);
});

Deno.test("lazyConverger: plan or apply before a load refuse; a failed load fails the pass and the next one loads again", async () => {
  let attempt = 0;
  const c = lazyConverger("host", () => {
    attempt++;
    return attempt === 1 ? Promise.reject(new Error("chunk missing")) : Promise.resolve(real());
  });
  assert.throws(() => c.plan("x", "seen x"), /before its first observe/);
  assert.throws(() => c.apply([], "x", ctx), /before its first observe/);
  await assert.rejects(c.observe(ctx, "x"), /chunk missing/);
  assert.equal(await c.observe(ctx, "x"), "seen x");
  assert.equal(attempt, 2);
});

Deno.test("lazyConverger refuses a loaded converger of another section", async () => {
  const c = lazyConverger("host", () => Promise.resolve(real("access")));
  await assert.rejects(c.observe(ctx, "x"), /the host converger loaded the access section's/);
});
