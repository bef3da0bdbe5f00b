/**
 * Makes the generated static module define its message classes and enums on first use (`proto/gen.ts` applies it to
 * `pbjs` output). `pbjs` wraps every type in an IIFE that runs at import: about 140 types' constructors, prototypes,
 * encoders and decoders compiled and built before any code runs, most of which an agent never touches before its first
 * `Hello` (its IIFEs were a third of the bundled sim's start-up compile time; issue 24). Each
 *
 * ```js
 *         v1.Hello = (function() {
 *             ...
 *             return Hello;
 *         })();
 * ```
 *
 * becomes
 *
 * ```js
 *         $lazy(v1, "Hello", function() {
 *             ...
 *             return Hello;
 *         });
 * ```
 *
 * where `$lazy` installs a getter that runs the function once, on the first read of `v1.Hello`, and replaces itself
 * with the value: the same object every later read sees, the same property (enumerable, writable) as before. Types
 * reach each other only inside functions (`$root.bcd.v1.X.encode(...)` in an encoder), so no type needs another at
 * definition. The namespaces (`bcd.v1`, `google.protobuf`) stay eager: they hold only the getters.
 *
 * The rewrite is textual on `pbjs`'s fixed layout (an opening line `<indent><ns>.<Name> = (function() {` and its
 * closing `<same indent>})();`) and refuses output of another shape rather than guess.
 *
 * @module
 */

/** The helper the rewritten module defines once, after its imports. */
export const LAZY_HELPER = [
  "const $lazy = (o, k, f) => $Object.defineProperty(o, k, {",
  "    configurable: true,",
  "    enumerable: true,",
  "    get() {",
  "        const value = f();",
  "        $Object.defineProperty(o, k, { value, writable: true, enumerable: true, configurable: true });",
  "        return value;",
  "    },",
  "    set(value) {",
  "        $Object.defineProperty(o, k, { value, writable: true, enumerable: true, configurable: true });",
  "    },",
  "});",
].join("\n");

const _OPEN = /^( +)([A-Za-z_$][\w$]*)\.([A-Za-z_$][\w$]*) = \(function\(\) \{$/;
const _ANCHOR = "const $root = ";

/** `pbjs`'s static module with every type IIFE made lazy; throws on a layout it does not know. */
export function lazyTypes(code: string): string {
  const lines = code.split("\n");
  const out: string[] = [];
  const open: { indent: string; at: number }[] = [];
  let rewritten = 0;
  for (const [i, line] of lines.entries()) {
    const m = _OPEN.exec(line);
    // Namespaces (`bcd.v1 = (function() {` at four spaces) stay eager; types sit deeper.
    if (m && m[1]!.length >= 8) {
      open.push({ indent: m[1]!, at: i });
      out.push(`${m[1]}$lazy(${m[2]}, ${JSON.stringify(m[3])}, function() {`);
      continue;
    }
    const top = open.at(-1);
    if (top && line === `${top.indent}})();`) {
      open.pop();
      out.push(`${top.indent}});`);
      rewritten++;
      continue;
    }
    if (line.startsWith(_ANCHOR)) out.push(LAZY_HELPER, "");
    out.push(line);
  }
  if (open.length > 0) throw new Error(`lazyTypes: the IIFE opened on line ${open[0]!.at + 1} never closes`);
  if (rewritten === 0 || !code.includes(_ANCHOR) || !code.includes("const $Object = ")) {
    throw new Error("lazyTypes: not the pbjs static-module layout this rewrite knows");
  }
  return out.join("\n");
}
