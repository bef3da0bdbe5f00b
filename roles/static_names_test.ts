import assert from "node:assert/strict";
import * as acorn from "acorn";
import { applyEdits, canWriteName, identifiersIn, keepNamesHelpers, staticNames } from "./static_names.ts";
import { compileBundleEagerly, compileEagerly } from "./eager.ts";

const parse = (source: string) => acorn.parse(source, { ecmaVersion: "latest", sourceType: "module" });

// A module as esbuild writes one with --minify --keep-names, one row per form the rewrite meets.
const HELPER = 'var k=(f,n)=>Object.defineProperty(f,"name",{value:n,configurable:!0});';
const MODULE = [
  HELPER,
  "export const early=b(2);", // a declaration called before its line, as hoisting allows
  'function b(x){return x*10}k(b,"times");',
  'async function d(){return await b(1)}k(d,"later");',
  'function*e(){yield 1}k(e,"pair");',
  'var row=5;function r(){return row}k(r,"row");', // its body reads an outer `row`: keeps its call
  'function q(){return 1}k(q,"default");', // not a binding name: keeps its call
  'var C=class extends Error{static{k(this,"ArgsError")}constructor(m){super(m);this.name="ArgsError"}};',
  'var D=class n{static{k(this,"Own")}static make(){return new n}};', // a name of its own, read inside: kept
  'var E=class extends Error{static{k(this,"Shadow")}m(){return Shadow}};var Shadow=3;',
  'var f={g:k(function(u){return u+1},"onFirstCall"),h:k(async function(){return 2},"later2")};',
  'var s=k(function(){return s},"selfRef");',
  "export{b,d,e,r,q,C,D,E,f,s};",
].join("\n");

async function load(source: string): Promise<Record<string, unknown>> {
  return await import(`data:text/javascript;base64,${btoa(source)}`);
}

type Named = { name: string };

Deno.test("keepNamesHelpers: a module's own helper (Object.defineProperty or an alias of it) and one it imports", () => {
  const programs = new Map([
    [
      "runtime.js",
      parse('var c=Object.defineProperty;var d=(a,b)=>c(a,"name",{value:b,configurable:!0});export{d as a};'),
    ],
    ["entry.js", parse('import{a as z}from"./runtime.js";import{x}from"./other.js";function f(){}z(f,"g");')],
    ["own.js", parse(HELPER)],
    ["other.js", parse("var k=(f,n)=>f;export{k as x};")], // not a naming helper
  ]);
  const helpers = keepNamesHelpers(programs);
  assert.deepEqual([...helpers.get("runtime.js")!], ["d"]);
  assert.deepEqual([...helpers.get("entry.js")!], ["z"]);
  assert.deepEqual([...helpers.get("own.js")!], ["k"]);
  assert.deepEqual([...helpers.get("other.js")!], []);
});

Deno.test("canWriteName: a strict-mode binding name that the code's identifiers (not its property names) do not read", () => {
  const ids = identifiersIn(parse("function f(a){return a.row+{row:1}.row+g(b)}"));
  assert.deepEqual([...ids].sort(), ["a", "b", "f", "g"]);
  // A shorthand property reads the binding of its name (acorn gives it a value node apart from its key); a computed
  // key reads its expression.
  assert.deepEqual([...identifiersIn(parse("function f(){return {row,[col]:1}}"))].sort(), ["col", "f", "row"]);
  const table: [string, ReadonlySet<string>, boolean][] = [
    ["row", ids, true],
    ["g", ids, false], // read inside: the name would hide it
    ["default", ids, false],
    ["eval", ids, false],
    ["arguments", ids, false],
    ["await", ids, false],
    ["a-b", ids, false],
    ["$x", ids, true],
    ["row", new Set(["eval"]), false], // a direct eval may read any name
  ];
  for (const [name, identifiers, can] of table) assert.equal(canWriteName(name, identifiers), can, name);
});

Deno.test("the names are written into the source where they can be, and the module behaves the same", async () => {
  const { source } = compileEagerly(MODULE, new Set(["later"]), new Set(["k"]));
  assert.ok(source.includes("var b=function times(x){return x*10};"), source);
  assert.ok(source.includes("var d=(async function later(){"), "hinted: parenthesised"); // and renamed
  assert.ok(source.includes("var e=function*pair(){yield 1};") || source.includes("var e=function* pair(){yield 1};"));
  assert.ok(source.includes('function r(){return row}k(r,"row");'), "kept: its body reads row");
  assert.ok(source.includes('function q(){return 1}k(q,"default");'), "kept: default is reserved");
  assert.ok(source.includes("var C=class ArgsError extends Error{constructor(m)"), source);
  assert.ok(source.includes('var D=class n{static{k(this,"Own")}'), "kept: the class reads its own name");
  assert.ok(source.includes('var E=class extends Error{static{k(this,"Shadow")}'), "kept: its code reads Shadow");
  assert.ok(source.includes("g:function onFirstCall(u){return u+1}"), source);
  assert.ok(source.includes("h:async function later2(){return 2}"), source);
  assert.ok(source.includes("var s=function selfRef(){return s};"), source);
  assert.equal(source.match(/k\(/g)?.length, 4, "the four kept calls");
  const before = await load(MODULE), after = await load(source);
  for (const m of [before, after]) {
    assert.equal(m.early, 20);
    assert.equal((m.b as (x: number) => number)(3), 30);
    assert.equal(await (m.d as () => Promise<number>)(), 10);
    assert.deepEqual([...(m.e as () => Iterable<number>)()], [1]);
    assert.equal((m.r as () => number)(), 5);
    assert.equal((m.D as { make(): unknown }).make() instanceof (m.D as new () => unknown), true);
    assert.equal(new (m.E as new () => { m(): number })().m(), 3);
    const f = m.f as { g(u: number): number; h(): Promise<number> };
    assert.equal(f.g(1), 2);
    assert.equal(await f.h(), 2);
    assert.equal((m.s as () => unknown)(), m.s);
    const names = ["b", "d", "e", "r", "q", "C", "D", "E", "s"].map((x) => (m[x] as Named).name);
    assert.deepEqual(names, ["times", "later", "pair", "row", "default", "ArgsError", "Own", "Shadow", "selfRef"]);
    assert.deepEqual([f.g.name, f.h.name], ["onFirstCall", "later2"]);
    const err = new (m.C as new (m: string) => Error)("x");
    assert.equal(err.name, "ArgsError");
  }
  // A stack trace names a function by its written name, as it did by the helper's.
  const thrower = await load(
    compileEagerly(HELPER + 'function t(){throw new Error("x")}k(t,"boom");export{t};', new Set(), new Set(["k"]))
      .source,
  );
  assert.throws(() => (thrower.t as () => void)(), (e: Error) => /\bboom \(/.test(e.stack ?? ""));
});

Deno.test("a function expression that would begin a statement keeps its call: it would read as a declaration", () => {
  const source = HELPER + 'k(function(){return 1},"first").call();';
  const { edits } = staticNames(parse(source), source, new Set(["k"]));
  assert.deepEqual(edits, []);
});

Deno.test("compileBundleEagerly names through an imported helper, and keeps the declarations of a module on a cycle", async () => {
  const bundle = new Map([
    ["entry.js", 'import"./b.js";import{r}from"./a.js";import{g as h}from"./c.js";export{r,h};'],
    ["a.js", 'import{g}from"./b.js";export const r=g();'],
    ["b.js", 'import"./a.js";import{a as n}from"./rt.js";function g(){return 7}n(g,"seven");export{g};'],
    ["c.js", 'import{a as n}from"./rt.js";function g(){return 8}n(g,"eight");export{g};'],
    ["rt.js", 'var c=Object.defineProperty;var d=(a,b)=>c(a,"name",{value:b,configurable:!0});export{d as a};'],
  ]);
  const modules = compileBundleEagerly(bundle, new Set());
  assert.equal(modules.get("b.js"), bundle.get("b.js"), "on a cycle: as it was");
  assert.equal(modules.get("c.js"), 'var g=function eight(){return 8};\nimport{a as n}from"./rt.js";export{g};');
  const work = await Deno.makeTempDir({ prefix: "bcd-static-names-" });
  try {
    for (const [name, source] of modules) await Deno.writeTextFile(`${work}/${name}`, source);
    const entry = await import(`file://${work}/entry.js`);
    assert.equal(entry.r, 7);
    assert.equal((entry.h as () => number)(), 8);
    assert.equal((entry.h as Named).name, "eight");
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});

Deno.test("applyEdits applies the edits inside its range in order and refuses overlapping ones", () => {
  const edits = [{ start: 4, end: 4, text: "X" }, { start: 0, end: 1, text: "" }, { start: 8, end: 9, text: "!" }];
  assert.equal(applyEdits("abcdefghij", 0, 10, edits), "bcdXefgh!j");
  assert.equal(applyEdits("abcdefghij", 2, 6, edits), "cdXef");
  assert.throws(() => applyEdits("abcdef", 0, 6, [{ start: 1, end: 4, text: "" }, { start: 2, end: 3, text: "" }]));
});
