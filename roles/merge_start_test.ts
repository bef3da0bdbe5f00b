import assert from "node:assert/strict";
import { denoRebundle, mergeStartChunks, startChunks } from "./merge_start.ts";

/**
 * A bundle as `deno bundle --code-splitting` writes one: an entry that awaits at top level, two chunks on its start
 * (one importing the other), a chunk only an `import()` loads that imports both. Each module logs when it runs and
 * the state it shares, so a run prints the order the code ran in and whether the lazy chunk saw the start's instances.
 */
const BUNDLE: ReadonlyMap<string, string> = new Map([
  [
    "bcd-x.js",
    'import{b as two}from"./chunk-B.js";import{a as one,n as count}from"./chunk-A.js";import"./chunk-C.js";' +
    'console.log("entry",one(),two(),count());const m=await import("./lazy-L.js");console.log("lazy says",m.seen());',
  ],
  ["chunk-A.js", 'console.log("A runs");let t=0;function a(){return++t}function n(){return t}export{a,n};'],
  ["chunk-B.js", 'import{a as i}from"./chunk-A.js";console.log("B runs",i());function b(){return"b"}export{b};'],
  ["chunk-C.js", 'console.log("C runs");'],
  [
    "lazy-L.js",
    'import{n as c}from"./chunk-A.js";import{b as q}from"./chunk-B.js";console.log("L runs");' +
    'function seen(){return[c(),q()].join(",")}export{seen};',
  ],
]);

async function _run(modules: ReadonlyMap<string, string>, entry: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-merge-test-" });
  try {
    for (const [name, source] of modules) await Deno.writeTextFile(`${dir}/${name}`, source);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-config", "--no-lock", `${dir}/${entry}`],
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(30_000),
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    return new TextDecoder().decode(out.stdout);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("the start chunks, in the order their code runs", () => {
  assert.deepEqual(startChunks(BUNDLE, "bcd-x.js"), ["chunk-A.js", "chunk-B.js", "chunk-C.js"]);
});

Deno.test("merged, the start loads two files and runs as the split bundle did; a lazy chunk shares its instances", async () => {
  const before = await _run(BUNDLE, "bcd-x.js");
  assert.equal(before, "A runs\nB runs 1\nC runs\nentry 2 b 2\nL runs\nlazy says 2,b\n");
  const r = await mergeStartChunks(BUNDLE, "bcd-x.js", denoRebundle);
  assert.equal(r.merged, "bcd-x-start.js");
  assert.deepEqual(r.chunks, ["chunk-A.js", "chunk-B.js", "chunk-C.js"]);
  assert.deepEqual([...r.modules.keys()].sort(), ["bcd-x-start.js", "bcd-x.js", "lazy-L.js"]);
  assert.deepEqual(startChunks(r.modules, "bcd-x.js"), ["bcd-x-start.js"]);
  // The entry's top-level await does not hold the lazy chunk back: it imports the merged module, not the entry.
  assert.equal(await _run(r.modules, "bcd-x.js"), before);
});

Deno.test("fewer than two start chunks: the bundle comes back as it was", async () => {
  const one = new Map([
    ["bcd-y.js", 'import{a}from"./chunk-A.js";console.log(a());'],
    ["chunk-A.js", "function a(){return 1}export{a};"],
  ]);
  const r = await mergeStartChunks(one, "bcd-y.js", () => Promise.reject(new Error("not called")));
  assert.equal(r.merged, null);
  assert.deepEqual(r.modules, one);
});

Deno.test("a start chunk that another module imports as a namespace or loads by import() fails the build, naming both", async () => {
  for (
    const [lazy, message] of [
      [
        'import*as ns from"./chunk-A.js";export{ns};',
        /lazy-L\.js: ImportNamespaceSpecifier of the start chunk chunk-A\.js/,
      ],
      [
        'export function f(){return import("./chunk-B.js")}',
        /lazy-L\.js: import\("\.\/chunk-B\.js"\) of the start chunk/,
      ],
    ] as const
  ) {
    const modules = new Map(BUNDLE);
    modules.set("lazy-L.js", lazy);
    await assert.rejects(mergeStartChunks(modules, "bcd-x.js", denoRebundle), message);
  }
});

Deno.test("what the first pass left external stays external: an npm: package is not bundled by the second", async () => {
  const modules = new Map(BUNDLE);
  modules.set(
    "chunk-C.js",
    'import{x}from"npm:left-pad@1.3.0";import{DatabaseSync}from"node:sqlite";export{x,DatabaseSync};',
  );
  let asked: readonly string[] = [];
  const r = await mergeStartChunks(modules, "bcd-x.js", (dir, input, output, external) => {
    asked = external;
    return denoRebundle(dir, input, output, external);
  });
  assert.ok(asked.includes("npm:left-pad@1.3.0") && asked.includes("./lazy-L.js"), asked.join(" "));
  assert.match(r.modules.get("bcd-x-start.js")!, /from"npm:left-pad@1\.3\.0"/);
});

Deno.test("a start chunk that awaits at top level: nothing is merged", async () => {
  const modules = new Map(BUNDLE);
  modules.set("chunk-C.js", 'console.log("C runs");await Promise.resolve();');
  const r = await mergeStartChunks(modules, "bcd-x.js", () => Promise.reject(new Error("not called")));
  assert.equal(r.merged, null);
  assert.deepEqual(r.modules, modules);
});
