import assert from "node:assert/strict";
import * as acorn from "acorn";
import { compileBundleEagerly, compileEagerly, inImportCycles, loadStartHints, topLevelFunctions } from "./eager.ts";
import { bundleRole } from "./build.ts";

// A module as esbuild writes one with --minify --keep-names: minified declarations, each named by a helper call.
const MODULE = [
  'var k=(f,n)=>Object.defineProperty(f,"name",{value:n,configurable:!0});',
  "export const early=b(2);", // calls a declaration written further down, as hoisting allows
  'function b(x){return x*10}k(b,"times");',
  'function c(x){return x+1}k(c,"plusOne");',
  'async function d(){return await c(1)}k(d,"later");',
  'function*e(){yield 1;yield 2}k(e,"pair");',
  'var o={m(){return 3}};function g(){return o.m()}k(g,"viaMethod");',
  'function h(){return "first"}k(h,"twice");function i(){return "second"}k(i,"twice");',
  "export{b,c,d,e,g,h,i};",
].join("\n");

async function load(source: string): Promise<Record<string, unknown>> {
  const url = `data:text/javascript;base64,${btoa(source)}`;
  return await import(url);
}

Deno.test("topLevelFunctions: each declaration, its minified and source names and its parameter list", () => {
  const fns = topLevelFunctions(acorn.parse(MODULE, { ecmaVersion: "latest", sourceType: "module" }), MODULE);
  assert.deepEqual(fns.map((f) => [f.name, f.sourceName]), [
    ["b", "times"],
    ["c", "plusOne"],
    ["d", "later"],
    ["e", "pair"],
    ["g", "viaMethod"],
    ["h", "twice"],
    ["i", "twice"],
  ]);
  for (const f of fns) assert.deepEqual(MODULE[f.params], "(", f.name);
});

Deno.test("compileEagerly hoists the hinted declarations as parenthesised expressions; the module behaves the same", async () => {
  const hints = new Set(["times", "later", "pair", "twice", "viaMethod", "gone"]);
  const { source, hoisted } = compileEagerly(MODULE, hints);
  assert.deepEqual(hoisted, ["times", "later", "pair", "viaMethod", "twice", "twice"]);
  assert.ok(source.startsWith("var b=(function b(x){return x*10});var d=(async function d()"), source.slice(0, 80));
  assert.ok(source.includes("var e=(function*e(){yield 1;yield 2});"));
  assert.ok(source.includes('function c(x){return x+1}k(c,"plusOne");')); // not hinted: as it was
  assert.deepEqual(source.match(/function b\(/g)?.length, 1);
  const before = await load(MODULE), after = await load(source);
  for (const m of [before, after]) {
    assert.deepEqual(m.early, 20);
    assert.deepEqual((m.b as (x: number) => number)(3), 30);
    assert.deepEqual((m.b as { name: string }).name, "times");
    assert.deepEqual(await (m.d as () => Promise<number>)(), 2);
    assert.deepEqual([...(m.e as () => Iterable<number>)()], [1, 2]);
    assert.deepEqual((m.g as () => number)(), 3);
    assert.deepEqual([(m.h as () => string)(), (m.i as () => string)()], ["first", "second"]);
  }
});

Deno.test("compileEagerly leaves a module without hinted declarations as it is, and refuses one that does not parse", () => {
  assert.deepEqual(compileEagerly(MODULE, new Set()).source, MODULE);
  assert.deepEqual(compileEagerly(MODULE, new Set(["absent"])), { source: MODULE, hoisted: [] });
  assert.throws(() => compileEagerly("function (", new Set(["x"])), SyntaxError);
});

Deno.test("a module on an import cycle keeps its declarations: the module before it in the cycle may call them", async () => {
  // The entry imports b.js, which imports a.js, which imports b.js back: a.js runs first and calls b's `g` while b.js
  // has not run, where only a declaration is bound.
  const bundle = new Map([
    ["entry.js", 'import"./b.js";import{r}from"./a.js";export{r};'],
    ["a.js", 'import{g}from"./b.js";export const r=g();'],
    ["b.js", 'import"./a.js";var k=(f,n)=>f;function g(){return 7}k(g,"seven");export{g};'],
    ["c.js", 'var k=(f,n)=>f;function g(){return 8}k(g,"seven");export{g};'],
  ]);
  assert.deepEqual([...inImportCycles(bundle)].sort(), ["a.js", "b.js"]);
  const modules = compileBundleEagerly(bundle, new Set(["seven"]));
  assert.equal(modules.get("b.js"), bundle.get("b.js"));
  assert.ok(modules.get("c.js")!.startsWith("var g=(function g()"));
  const work = await Deno.makeTempDir({ prefix: "bcd-eager-cycle-" });
  try {
    for (const [name, source] of modules) await Deno.writeTextFile(`${work}/${name}`, source);
    assert.equal((await import(`file://${work}/entry.js`)).r, 7);
    // The same bundle with b.js rewritten anyway (a fresh directory: modules load once per URL) fails as said above.
    await Deno.mkdir(`${work}/forced`);
    for (const [name, source] of bundle) await Deno.writeTextFile(`${work}/forced/${name}`, source);
    await Deno.writeTextFile(`${work}/forced/b.js`, compileEagerly(bundle.get("b.js")!, new Set(["seven"])).source);
    await assert.rejects(import(`file://${work}/forced/entry.js`), TypeError);
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});

Deno.test("V8 compiles a hoisted function with its module, so a call after the module ran parses nothing", async () => {
  // The premise of the hints: without them V8 parses `b` lazily at its first call; with them, at the module's compile.
  const work = await Deno.makeTempDir({ prefix: "bcd-eager-" });
  try {
    const body = 'var k=(f,n)=>Object.defineProperty(f,"name",{value:n,configurable:!0});\n' +
      'function b(x){let s=0;for(let i=0;i<x;i++)s+=i;return s}k(b,"times");\n' +
      "await 0;\nDeno.stdout.writeSync(new TextEncoder().encode(String(b(4))));\n";
    const lazyParses = async (source: string) => {
      await Deno.writeTextFile(`${work}/m.js`, source);
      const log = `${work}/v8.log`;
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--no-config",
          `--v8-flags=--log-function-events,--logfile=${log},--no-logfile-per-isolate`,
          `${work}/m.js`,
        ],
        env: { DENO_DIR: `${work}/deno-dir` },
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.ok(out.success, new TextDecoder().decode(out.stderr));
      assert.deepEqual(new TextDecoder().decode(out.stdout), "6");
      const text = await Deno.readTextFile(log);
      return text.split("\n").filter((l) => l.startsWith("function,parse-function,") && l.endsWith(",b")).length;
    };
    assert.deepEqual(await lazyParses(body), 1, "unhinted, b is parsed at its first call");
    assert.deepEqual(await lazyParses(compileEagerly(body, new Set(["times"])).source), 0);
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});

Deno.test("a bundled daemon carries its start hints: the sim's entry begins with the hoisted functions", async () => {
  const hints = await loadStartHints();
  assert.ok((hints.sim?.length ?? 0) > 0 && (hints.node?.length ?? 0) > 0, "roles/start_hints.json lists sim and node");
  const work = await Deno.makeTempDir({ prefix: "bcd-eager-bundle-" });
  try {
    const dir = await bundleRole("sim", "eager-test", work);
    const entry = await Deno.readTextFile(`${dir}/bcd-sim.js`);
    const program = acorn.parse(entry, { ecmaVersion: "latest", sourceType: "module" });
    // deno-lint-ignore no-explicit-any
    const hoisted = (program.body as any[]).filter((st) =>
      st.type === "VariableDeclaration" && st.declarations[0]?.init?.type === "FunctionExpression" &&
      entry[st.declarations[0].init.start - 1] === "("
    );
    assert.ok(hoisted.length > 0, "no hoisted function in the sim's entry");
    const unhinted = await bundleRole("sim", "eager-test", `${work}/plain`, { startHints: false });
    assert.ok(
      !(await Deno.readTextFile(`${unhinted}/bcd-sim.js`)).startsWith("var "),
      "startHints: false hoists nothing",
    );
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});
