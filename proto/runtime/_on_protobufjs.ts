/**
 * Test and bench support: `pbjs`'s static module of bcd's classes (`proto/gen/bcd_static.js`) loaded on protobufjs'
 * runtime (`_protobufjs_reference.ts`), the reference bcd's own classes (built from the descriptor by
 * `proto/classes.ts`, on bcd's runtime) are compared with: bytes, values and errors in `runtime_test.ts`, speed in
 * `bench/wire_bench.ts`. Needs read access to `proto/`; writes nothing (the
 * copy is imported from a `data:` URL).
 *
 * @module
 */

const GEN = new URL("../gen/bcd_static.js", import.meta.url);
const FROM_OBJECT = new URL("../gen/bcd_from_object.js", import.meta.url);
/** The import line `gen.ts` gives the generated modules. */
const IMPORT = 'import $protobuf from "../runtime/mod.ts";';
/** The from-object module's import of the classes it completes. */
const IMPORT_CLASSES = 'import "./bcd.js";';

/**
 * The `bcd` and `google` namespaces of `pbjs`'s static module, running on protobufjs/minimal, with their `fromObject`
 * installed by a copy of `bcd_from_object.js` on the same runtime.
 */
export async function onProtobufjs(): Promise<{ bcd: unknown; google: unknown }> {
  const ref = new URL("./_protobufjs_reference.ts", import.meta.url).href;
  const classes = _dataUrl(await _onRuntime(GEN, ref));
  const fromObject = (await _onRuntime(FROM_OBJECT, ref)).replace(IMPORT_CLASSES, `import ${JSON.stringify(classes)};`);
  if (!fromObject.includes(classes)) {
    throw new Error(`${FROM_OBJECT.pathname} no longer has the line ${IMPORT_CLASSES}`);
  }
  await import(_dataUrl(fromObject));
  return await import(classes);
}

async function _onRuntime(url: URL, runtime: string): Promise<string> {
  const code = await Deno.readTextFile(url);
  if (!code.includes(IMPORT)) throw new Error(`${url.pathname} no longer has the line ${IMPORT}`);
  return code.replace(IMPORT, `import $protobuf from ${JSON.stringify(runtime)};`);
}

function _dataUrl(code: string): string {
  const bytes = new TextEncoder().encode(code);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return `data:text/javascript;base64,${btoa(binary)}`;
}
