/**
 * Function and class names written into a bundle's source, instead of set when it runs (issue 24).
 *
 * esbuild's `--keep-names` keeps the source names that `--minify` renames by calling a helper on each function and
 * class: `function C(n){...}a(C,"row");`, `class extends E{static{a(this,"ArgsError")}...}`, `a(function(u){...},
 * "onFirstCall")`. Each call is an `Object.defineProperty` that also gives the function a map of its own, and a module
 * makes them as it runs: the shipped sim made ~520 of them before its first `Hello`. Written into the source, the
 * sim's start took 1.6 and 3.3 ms less CPU in two runs of 81 interleaved starts, with ~115 fewer page faults. A
 * named function or class expression has the same `name` from its own source: `var C=function row(n){...};`, `class
 * ArgsError extends E{...}`, `function onFirstCall(u){...}`, which stack traces show as they showed the helper's.
 *
 * A name written into the source is also a binding inside the function or class, so it must not hide one of the same
 * name that its code reads: a name is written only where it is a valid strict-mode binding that no identifier of the
 * function or class is (property names aside); where it is one, or where the class already has a name of its own
 * (`class n{...}`, which its code reads), the helper call stays. A declaration renamed becomes a `var`-bound
 * expression, which `eager.ts` hoists to the top of its module as it hoists hinted ones.
 *
 * @module
 */

// deno-lint-ignore no-explicit-any
type Node = any;

/** A change to a source: `[start, end)` replaced by `text` (an insertion when `start === end`). */
export interface Edit {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/** A top-level declaration whose source name can be written into it, and the helper call that names it now. */
export interface NamedDeclaration {
  /** Its source name. */
  readonly name: string;
  /** The `helper(f, "name");` statement, removed once the name is written. */
  readonly statement: Node;
}

const RESERVED = new Set(
  ("break case catch class const continue debugger default delete do else enum export extends false finally for " +
    "function if import in instanceof new null return super switch this throw true try typeof var void while with " +
    "yield let static implements interface package private protected public await arguments eval").split(" "),
);

/**
 * Whether `name` can be written as the own name of a function or class that reads the `identifiers`
 * ({@link identifiersIn}): a strict-mode binding name that none of them is (nor `eval`, which reads any).
 */
export function canWriteName(name: string, identifiers: ReadonlySet<string>): boolean {
  return /^[A-Za-z_$][\w$]*$/.test(name) && !RESERVED.has(name) && !identifiers.has(name) && !identifiers.has("eval");
}

/**
 * The identifiers under `node` that may name a binding: every one but the names of properties (`o.p`, `{p: v}`, a
 * class member's). Labels count too: a superset only makes {@link canWriteName} decline more.
 */
export function identifiersIn(node: Node): Set<string> {
  const names = new Set<string>();
  const keys = new Set<Node>();
  walk(node, (n) => {
    if (n.type === "MemberExpression" && !n.computed) keys.add(n.property);
    else if (
      n.type === "Property" || n.type === "MethodDefinition" || n.type === "PropertyDefinition"
    ) {
      if (!n.computed) keys.add(n.key);
    } else if (n.type === "Identifier" && !keys.has(n)) names.add(n.name);
  });
  return names;
}

/** `node` is `Object.defineProperty`. */
function _isObjectDefineProperty(node: Node): boolean {
  return node?.type === "MemberExpression" && !node.computed && node.object.type === "Identifier" &&
    node.object.name === "Object" && node.property.name === "defineProperty";
}

/** `init` is `(f, n) => defineProperty(f, "name", { value: n, ... })`, `defineProperty` being `Object`'s or an alias. */
function _isNameHelper(init: Node, defineAliases: ReadonlySet<string>): boolean {
  if (init?.type !== "ArrowFunctionExpression" || init.params.length !== 2) return false;
  const [f, n] = init.params;
  const call = init.body;
  if (f.type !== "Identifier" || n.type !== "Identifier" || call?.type !== "CallExpression") return false;
  const callee = call.callee;
  const isDefine = callee.type === "Identifier" ? defineAliases.has(callee.name) : _isObjectDefineProperty(callee);
  const [target, key, desc] = call.arguments;
  return isDefine && call.arguments.length === 3 && target.type === "Identifier" && target.name === f.name &&
    key.type === "Literal" && key.value === "name" && desc.type === "ObjectExpression" &&
    desc.properties.some((p: Node) =>
      p.type === "Property" && !p.computed && p.key.type === "Identifier" && p.key.name === "value" &&
      p.value.type === "Identifier" && p.value.name === n.name
    );
}

/** The names a module binds its own keep-names helper to, and the names it exports it as. */
function _localHelpers(program: Node): { local: Set<string>; exported: Set<string> } {
  const defineAliases = new Set<string>(), local = new Set<string>(), exported = new Set<string>();
  for (const st of program.body) {
    if (st.type !== "VariableDeclaration") continue;
    for (const d of st.declarations) {
      if (d.id.type !== "Identifier") continue;
      if (_isObjectDefineProperty(d.init)) defineAliases.add(d.id.name);
      else if (_isNameHelper(d.init, defineAliases)) local.add(d.id.name);
    }
  }
  for (const st of program.body) {
    if (st.type !== "ExportNamedDeclaration" || st.source) continue;
    for (const s of st.specifiers) if (local.has(s.local.name)) exported.add(s.exported.name ?? s.exported.value);
  }
  return { local, exported };
}

/**
 * The keep-names helper's local names in each module of a bundle (file name -> parsed module; modules import each
 * other as `"./name"`): the one a module defines and the ones it imports from the module that defines it.
 */
export function keepNamesHelpers(programs: ReadonlyMap<string, Node>): Map<string, Set<string>> {
  const own = new Map([...programs].map(([name, program]) => [name, _localHelpers(program)]));
  const out = new Map<string, Set<string>>();
  for (const [name, program] of programs) {
    const helpers = new Set(own.get(name)!.local);
    for (const st of program.body) {
      if (st.type !== "ImportDeclaration") continue;
      const from = own.get(String(st.source.value).replace(/^\.\//, ""));
      if (!from) continue;
      for (const s of st.specifiers) {
        if (s.type === "ImportSpecifier" && from.exported.has(s.imported.name ?? s.imported.value)) {
          helpers.add(s.local.name);
        }
      }
    }
    out.set(name, helpers);
  }
  return out;
}

/** A call of one of `helpers` with two arguments, the second a string: `[its first argument, the name]`. */
function _helperCall(node: Node, helpers: ReadonlySet<string>): [Node, string] | undefined {
  if (node?.type !== "CallExpression" || node.callee.type !== "Identifier" || !helpers.has(node.callee.name)) return;
  const [value, name] = node.arguments;
  if (node.arguments.length !== 2 || name.type !== "Literal" || typeof name.value !== "string") return;
  return [value, name.value];
}

/** Every node under `node` with its ancestors (nearest last), depth first. */
export function walk(
  node: Node,
  visit: (node: Node, ancestors: readonly Node[]) => void,
  ancestors: Node[] = [],
): void {
  visit(node, ancestors);
  ancestors.push(node);
  for (const [key, value] of Object.entries(node)) {
    if (key === "type" || key === "start" || key === "end") continue;
    if (Array.isArray(value)) {
      for (const v of value) if (v && typeof v.type === "string") walk(v, visit, ancestors);
    } else if (value && typeof value === "object" && typeof (value as Node).type === "string") {
      walk(value, visit, ancestors);
    }
  }
  ancestors.pop();
}

/**
 * What writes the names of module `program` (parsed from `source`, its keep-names helpers bound to `helpers`) into its
 * source: `edits` name its class expressions and the function expressions passed to the helper, dropping the calls;
 * `declarations` are its top-level function declarations that can take their source names, by minified name (the
 * caller rewrites them, as only a `var`-bound expression can carry a name other than its binding's).
 */
export function staticNames(
  program: Node,
  source: string,
  helpers: ReadonlySet<string>,
): { edits: Edit[]; declarations: Map<string, NamedDeclaration> } {
  const edits: Edit[] = [];
  const declarations = new Map<string, NamedDeclaration>();
  if (helpers.size === 0) return { edits, declarations };
  const functions = new Map<string, Node>();
  for (const st of program.body) if (st.type === "FunctionDeclaration" && st.id) functions.set(st.id.name, st);
  for (const st of program.body) {
    const call = st.type === "ExpressionStatement" ? _helperCall(st.expression, helpers) : undefined;
    if (call?.[0].type !== "Identifier") continue;
    const fn = functions.get(call[0].name);
    if (fn && !declarations.has(fn.id.name) && canWriteName(call[1], identifiersIn(fn))) {
      declarations.set(fn.id.name, { name: call[1], statement: st });
    }
  }
  walk(program, (node, ancestors) => {
    if (node.type === "ClassExpression" && !node.id && source.startsWith("class", node.start)) {
      const block = node.body.body[0];
      const only = block?.type === "StaticBlock" && block.body.length === 1 ? block.body[0] : undefined;
      const call = only?.type === "ExpressionStatement" ? _helperCall(only.expression, helpers) : undefined;
      if (call?.[0].type === "ThisExpression" && canWriteName(call[1], identifiersIn(node))) {
        edits.push({ start: node.start + 5, end: node.start + 5, text: ` ${call[1]}` });
        edits.push({ start: block.start, end: block.end, text: "" });
      }
      return;
    }
    const call = _helperCall(node, helpers);
    const fn = call?.[0];
    if (fn?.type !== "FunctionExpression" || fn.id) return;
    // A function expression that would begin a statement would read as a declaration.
    if (ancestors.some((a) => a.type === "ExpressionStatement" && a.start === node.start)) return;
    if (!canWriteName(call![1], identifiersIn(fn))) return;
    const params = source.indexOf("(", fn.start);
    edits.push({ start: node.start, end: fn.start, text: "" });
    edits.push({ start: params, end: params, text: ` ${call![1]}` });
    edits.push({ start: fn.end, end: node.end, text: "" });
  });
  return { edits, declarations };
}

/** `source[start, end)` with the `edits` that lie inside it applied (edits do not overlap; insertions are empty ranges). */
export function applyEdits(source: string, start: number, end: number, edits: readonly Edit[]): string {
  const inside = edits.filter((e) => e.start >= start && e.end <= end)
    .sort((a, b) => a.start - b.start || (a.end - a.start) - (b.end - b.start));
  let out = "";
  let at = start;
  for (const e of inside) {
    if (e.start < at) throw new Error(`overlapping edits at ${e.start}`);
    out += source.slice(at, e.start) + e.text;
    at = e.end;
  }
  return out + source.slice(at, end);
}
