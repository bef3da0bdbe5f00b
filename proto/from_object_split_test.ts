import assert from "node:assert/strict";
import { splitFromObject } from "./from_object_split.ts";

const ROOT = new URL("../", import.meta.url);

/** pbjs's static layout, cut down: one namespace, one type with a fromObject between its other statics. */
const SAMPLE = [
  'import $protobuf from "./rt.js";',
  "const $Reader = $protobuf.Reader, $util = $protobuf.util;",
  "const $Object = $util.global.Object;",
  'const $root = $protobuf.roots["default"] || ($protobuf.roots["default"] = {});',
  "export const ns = $root.ns = (() => {",
  "    const ns = {};",
  "    ns.v1 = (function() {",
  "        const v1 = {};",
  "        v1.A = (function() {",
  "            const A = function () {};",
  "            A.create = function () {",
  "                return new A();",
  "            };",
  "            A.fromObject = function (object, _depth) {",
  "                if (object.x) {",
  "                    return new $root.ns.v1.A();",
  "                };",
  "                return object;",
  "            };",
  "            A.toObject = function () {",
  "                return {};",
  "            };",
  "            return A;",
  "        })();",
  "        return v1;",
  "    })();",
  "    return ns;",
  "})();",
].join("\n");

Deno.test("splitFromObject moves each type's fromObject whole into the module that installs it, and nothing else", () => {
  const { main, fromObject } = splitFromObject(SAMPLE);
  assert.equal(main, SAMPLE.split("\n").filter((_, i) => i < 13 || i > 18).join("\n"));
  assert.ok(main.includes("A.create = function") && main.includes("A.toObject = function"));
  assert.ok(fromObject.includes('import "./bcd.js";'));
  assert.ok(fromObject.includes("const $Reader = $protobuf.Reader, $util = $protobuf.util;\nconst $Object = "));
  assert.ok(fromObject.includes(
    [
      "$root.ns.v1.A.fromObject = function (object, _depth) {",
      "    if (object.x) {",
      "        return new $root.ns.v1.A();",
      "    };",
      "    return object;",
      "};",
    ].join("\n"),
  ));
});

Deno.test("splitFromObject refuses a module of another layout rather than guess", () => {
  assert.throws(() => splitFromObject("export const x = 1;\n"), /not the pbjs static-module layout/);
  const unclosed = SAMPLE.slice(0, SAMPLE.indexOf("                return object;"));
  assert.throws(() => splitFromObject(unclosed), /never closes/);
  const nested = SAMPLE.replace("            A.fromObject", "                A.fromObject");
  assert.throws(() => splitFromObject(nested), /not a namespace type's/);
});

Deno.test("the generated classes get fromObject only from bcd_from_object.js; toObject and toJSON stay on them", async () => {
  const probe = (withFromObject: boolean) =>
    [
      'import { bcd } from "./proto/gen/bcd.js";',
      ...(withFromObject ? ['import "./proto/gen/bcd_from_object.js";'] : []),
      "const c = bcd.v1.NodeFrame;",
      "const f = c.fromObject ? c.encode(c.fromObject({ heartbeat: { applied_generation: 7 } })).finish() : [];",
      "console.log(JSON.stringify({ from: typeof c.fromObject, to: typeof c.toObject, json: typeof c.prototype.toJSON,",
      "  bytes: [...f], spec: typeof bcd.v1.NodeSpec.fromObject }));",
    ].join("\n");
  const run = async (withFromObject: boolean) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--quiet", probe(withFromObject)],
      cwd: ROOT.pathname,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    return JSON.parse(new TextDecoder().decode(out.stdout));
  };
  assert.deepEqual(await run(false), {
    from: "undefined",
    to: "function",
    json: "function",
    bytes: [],
    spec: "undefined",
  });
  assert.deepEqual(await run(true), {
    from: "function",
    to: "function",
    json: "function",
    bytes: [18, 2, 8, 7],
    spec: "function",
  });
});
