import assert from "node:assert/strict";
import { lazyTypes } from "./lazy_types.ts";

const ROOT = new URL("../", import.meta.url);

/** A module of pbjs's static layout: two types (one nested), each counting its definitions. */
const SAMPLE = [
  "const $Object = globalThis.Object;",
  "const $root = {};",
  "export const defined = [];",
  "export const ns = $root.ns = (() => {",
  "    const ns = {};",
  "    ns.v1 = (function() {",
  "        const v1 = {};",
  "        v1.A = (function() {",
  "            defined.push('A');",
  "            const A = function () {};",
  "            A.Inner = (function() {",
  "                defined.push('A.Inner');",
  "                return { X: 1 };",
  "            })();",
  "            return A;",
  "        })();",
  "        v1.B = (function() {",
  "            defined.push('B');",
  "            return function B() {};",
  "        })();",
  "        return v1;",
  "    })();",
  "    return ns;",
  "})();",
].join("\n");

Deno.test("lazyTypes: a type is defined on its first read, once, and stays the same enumerable property", async () => {
  const url = `data:text/javascript;base64,${btoa(lazyTypes(SAMPLE))}`;
  const m = await import(url) as { defined: string[]; ns: { v1: Record<string, { Inner?: unknown }> } };
  assert.deepEqual(m.defined, [], "importing defines nothing");
  assert.deepEqual(Object.keys(m.ns.v1), ["A", "B"], "the types are listed as before");
  const a = m.ns.v1.A!;
  assert.deepEqual(m.defined, ["A"], "reading A defines A only (its nested type waits too)");
  assert.equal(m.ns.v1.A, a, "the same class on every read");
  assert.deepEqual(m.defined, ["A"], "defined once");
  assert.deepEqual(a.Inner, { X: 1 });
  assert.deepEqual(m.defined, ["A", "A.Inner"]);
  assert.equal(Object.getOwnPropertyDescriptor(m.ns.v1, "A")?.enumerable, true);
  m.ns.v1.B = { Inner: 2 };
  assert.deepEqual(m.ns.v1.B, { Inner: 2 }, "a write replaces the type without defining it");
  assert.deepEqual(m.defined, ["A", "A.Inner"]);
});

Deno.test("lazyTypes refuses a module of another layout rather than guess", () => {
  assert.throws(() => lazyTypes("export const x = 1;\n"), /not the pbjs static-module layout/);
  const unclosed = SAMPLE.replace("            })();\n            return A;", "            return A;");
  assert.throws(() => lazyTypes(unclosed), /never closes/);
});

Deno.test("importing proto/mod.ts defines only the message classes its own tables read, not every kind's", async () => {
  const probe = [
    'import { bcd } from "./proto/mod.ts";',
    "const v1 = bcd.v1;",
    "const lazy = Object.keys(v1).filter((k) => Object.getOwnPropertyDescriptor(v1, k).get !== undefined);",
    "console.log(JSON.stringify({ all: Object.keys(v1).length, lazy }));",
  ].join("\n");
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", probe],
    cwd: ROOT.pathname,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const { all, lazy } = JSON.parse(new TextDecoder().decode(out.stdout)) as { all: number; lazy: string[] };
  assert.ok(all > 100, `bcd.v1 lists its ${all} types`);
  for (const k of ["NodeSpec", "InventoryRefreshPayload", "DaemonUpgradeResult", "BmcQueryPayload"]) {
    assert.ok(lazy.includes(k), `${k} is not defined by the import`);
  }
});
