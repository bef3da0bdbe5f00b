// The wire layer must not start Deno's Node compatibility layer: no `node:` or `npm:` module in its graph, and no
// touch of `process`, `Buffer` or `global` while loading it and encoding, decoding and converting messages (the first
// touch costs an agent ~20 ms of its start; issue 24). Both fail on protobufjs' runtime, which touches all three.
import assert from "node:assert/strict";

const ROOT = new URL("../../", import.meta.url);
const MOD = new URL("proto/mod.ts", ROOT);

async function deno(args: string[]): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), { args, cwd: ROOT, stdout: "piped", stderr: "piped" }).output();
  const err = new TextDecoder().decode(out.stderr);
  assert.ok(out.success, `deno ${args.join(" ")} failed (exit ${out.code}): ${err}`);
  return new TextDecoder().decode(out.stdout);
}

Deno.test("proto/mod.ts's module graph is bcd's own files only: no node: or npm: module", async () => {
  const info = JSON.parse(await deno(["info", "--json", MOD.pathname])) as {
    modules: { specifier: string; kind: string }[];
  };
  const foreign = info.modules.filter((m) => !m.specifier.startsWith(ROOT.href)).map((m) => m.specifier);
  assert.deepEqual(foreign, []);
  assert.ok(info.modules.some((m) => m.specifier.endsWith("proto/runtime/reader.ts")), "the graph reads the runtime");
});

// Installed before proto/mod.ts is evaluated (imports evaluate in order): each global records its first read.
const TRAP = `
const touched = [];
for (const name of ["process", "Buffer", "global", "require"]) {
  Object.defineProperty(globalThis, name, {
    configurable: true,
    get() {
      touched.push(name);
      return undefined;
    },
  });
}
globalThis.__touched = touched;
`;

const PROBE = (mod: string) => `
import "./trap.js";
import { bcd, decodeNodeFrame, encodeNodeFrame, encodeMessage, decodeMessage } from ${JSON.stringify(mod)};
import ${JSON.stringify(new URL("proto/gen/bcd_from_object.js", ROOT).href)};
const bytes = encodeNodeFrame({ hello: { node_id: "n-1", applied_generation: 2 ** 40, challenge_sig: new Uint8Array(64) } });
const frame = decodeNodeFrame(bytes);
const json = bcd.v1.NodeFrame.toObject(frame, { longs: String, bytes: String, enums: String, defaults: true });
const again = encodeMessage(bcd.v1.NodeFrame, bcd.v1.NodeFrame.fromObject(json));
const spec = decodeMessage(bcd.v1.TelemetrySection, encodeMessage(bcd.v1.TelemetrySection, { resource_attributes: { a: "ü" } }));
if (again.length !== bytes.length || spec.resource_attributes.a !== "ü") throw new Error("round trip differs");
console.log(JSON.stringify(globalThis.__touched));
`;

Deno.test("loading proto/mod.ts and encoding, decoding and converting frames touches no process, Buffer or global", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-no-node-" });
  try {
    await Deno.writeTextFile(`${dir}/trap.js`, TRAP);
    await Deno.writeTextFile(`${dir}/probe.js`, PROBE(MOD.href));
    const out = await deno([
      "run",
      "--quiet",
      "--no-prompt",
      "--config",
      new URL("deno.json", ROOT).pathname,
      `${dir}/probe.js`,
    ]);
    assert.deepEqual(JSON.parse(out), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
