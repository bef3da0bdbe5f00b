/**
 * Test and bench support: `proto/gen/bcd.js` loaded a second time, on protobufjs' runtime
 * (`_protobufjs_reference.ts`) instead of bcd's, so the same generated code can be compared on both: bytes, values and
 * errors in `runtime_test.ts`, speed in `bench/wire_bench.ts`. Needs read access to `proto/`; writes nothing (the
 * copy is imported from a `data:` URL).
 *
 * @module
 */

const GEN = new URL("../gen/bcd.js", import.meta.url);
/** The import line `gen.ts` gives the generated module. */
const IMPORT = 'import $protobuf from "../runtime/mod.ts";';

/** The `bcd` and `google` namespaces of the generated module, running on protobufjs/minimal. */
export async function onProtobufjs(): Promise<{ bcd: unknown; google: unknown }> {
  const code = await Deno.readTextFile(GEN);
  if (!code.includes(IMPORT)) throw new Error(`${GEN.pathname} no longer has the line ${IMPORT}`);
  const ref = new URL("./_protobufjs_reference.ts", import.meta.url).href;
  const copy = code.replace(IMPORT, `import $protobuf from ${JSON.stringify(ref)};`);
  const bytes = new TextEncoder().encode(copy);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return await import(`data:text/javascript;base64,${btoa(binary)}`);
}
