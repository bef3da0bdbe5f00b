/**
 * Start hints: the bundled functions a role's start runs are compiled with its module, so V8's code cache holds them.
 *
 * Deno writes a module's V8 code cache when it first compiles the module, before running it; the cache then holds the
 * module's top-level code and the functions V8 compiled eagerly, and every function first called later is parsed and
 * compiled again on every start (issue 24: the shipped sim compiled 311 functions of its entry that way before its
 * first `Hello`, 83 KB of source). V8 compiles eagerly a function expression in parentheses (`(function f() {...})`,
 * its "PIFE" heuristic, which Deno's compile honours; V8's magic comments for the same need a compile option Deno
 * does not pass). So, after bundling, each top-level function declaration whose name is in the role's hints becomes
 * `var f=(function f(...){...});`, moved to the top of its module so that it is bound before any of the module's code
 * runs, as a declaration is: the hoisted binding and the function's behaviour are unchanged, and the function is
 * compiled with the module and cached with it. (A declaration is bound before any module of the bundle runs, a `var`
 * only once its own module starts; the two differ only for a module that another calls into before it ran, which a
 * cycle of imports allows, so a module on one is left as it is: {@link inImportCycles}.)
 *
 * Hints are the functions' source names (`--keep-names` writes `name(f,"sourceName")` beside each minified
 * declaration), listed per role in `start_hints.json` by `deno task start:hints`, which runs the role's bundle to its
 * first `Hello` and asks V8 which functions it compiled lazily. A hint that no longer names a function does nothing,
 * and a name shared by several functions hoists each; so a stale list costs start time, never behaviour. Methods stay
 * lazy: V8 has no eager form for them.
 *
 * @module
 */
import * as acorn from "acorn";
import { applyEdits, type Edit, keepNamesHelpers, staticNames } from "./static_names.ts";

/** What {@link compileEagerly} did to one module. */
export interface EagerResult {
  readonly source: string;
  /** The source names of the declarations it hoisted (one per declaration). */
  readonly hoisted: readonly string[];
}

// deno-lint-ignore no-explicit-any
type Node = any;

/** A top-level function declaration of a module. */
export interface TopLevelFunction {
  readonly node: Node;
  /** Its name in the module (minified). */
  readonly name: string;
  /** Its source name: `--keep-names`' `helper(f, "sourceName")` beside it, else its own name. */
  readonly sourceName: string;
  /** The offset of its parameter list, where V8's function events place a lazily compiled function. */
  readonly params: number;
}

/** The top-level function declarations of `program` (acorn's, of `source`), in order. */
export function topLevelFunctions(program: Node, source: string): TopLevelFunction[] {
  const declarations: Node[] = program.body.filter((st: Node) => st.type === "FunctionDeclaration" && st.id);
  const declared = new Set(declarations.map((d) => d.id.name as string));
  const names = new Map<string, string>();
  for (const st of program.body) {
    const call = st.type === "ExpressionStatement" ? st.expression : undefined;
    if (call?.type !== "CallExpression" || call.callee.type !== "Identifier" || call.arguments.length !== 2) continue;
    const [fn, name] = call.arguments;
    if (
      fn.type === "Identifier" && declared.has(fn.name) && name.type === "Literal" && typeof name.value === "string"
    ) {
      names.set(fn.name, name.value);
    }
  }
  return declarations.map((d) => ({
    node: d,
    name: d.id.name,
    sourceName: names.get(d.id.name) ?? d.id.name,
    params: source.indexOf("(", d.id.end),
  }));
}

/**
 * Rewrites the top-level function declarations of ES module `source` whose source names are in `hints` into
 * parenthesised function expressions bound by `var` at the top of the module (see the module doc). With `helpers`
 * (the local names of its `--keep-names` helper, `static_names.ts`) it also writes the source names into the module:
 * its class and function expressions take theirs, and so does each declaration that can (hoisted as a `var`-bound
 * expression too, unparenthesised unless hinted), its helper call dropped. `hoist: false` (a module on an import
 * cycle) leaves its declarations as they are. `source` must parse as a module; one that does not throws, naming where.
 */
export function compileEagerly(
  source: string,
  hints: ReadonlySet<string>,
  helpers: ReadonlySet<string> = new Set(),
  hoist = true,
): EagerResult {
  if (hints.size === 0 && helpers.size === 0) return { source, hoisted: [] };
  const program: Node = acorn.parse(source, { ecmaVersion: "latest", sourceType: "module" });
  const { edits, declarations } = staticNames(program, source, helpers);
  const chosen = hoist
    ? topLevelFunctions(program, source).filter((f) => hints.has(f.sourceName) || declarations.has(f.name))
    : [];
  if (chosen.length === 0 && edits.length === 0) return { source, hoisted: [] };
  const moved: Edit[] = [];
  let head = "";
  for (const { node, name, sourceName } of chosen) {
    const named = declarations.get(name);
    const own = named ? [...edits, { start: node.id.start, end: node.id.end, text: named.name }] : edits;
    const text = applyEdits(source, node.start, node.end, own);
    head += hints.has(sourceName) ? `var ${name}=(${text});` : `var ${name}=${text};`;
    moved.push({ start: node.start, end: node.end, text: "" });
    if (named) moved.push({ start: named.statement.start, end: named.statement.end, text: "" });
  }
  const outside = edits.filter((e) => !moved.some((m) => e.start >= m.start && e.end <= m.end));
  const rest = applyEdits(source, 0, source.length, [...moved, ...outside]);
  return {
    source: head === "" ? rest : `${head}\n${rest}`,
    hoisted: chosen.filter((f) => hints.has(f.sourceName)).map((f) => f.sourceName),
  };
}

/**
 * The modules of a bundle (file name -> source, importing each other as `"./name"`) that are on a cycle of static
 * imports. In such a cycle one module runs before the other has run, so the other's `var`-bound functions would not
 * be bound yet where its declarations were: {@link compileBundleEagerly} leaves them as they are.
 */
export function inImportCycles(modules: ReadonlyMap<string, string>): Set<string> {
  const edges = new Map<string, string[]>();
  for (const [name, source] of modules) {
    const program: Node = acorn.parse(source, { ecmaVersion: "latest", sourceType: "module" });
    edges.set(
      name,
      program.body
        .filter((st: Node) => st.source && /^(Import|ExportNamed|ExportAll)Declaration$/.test(st.type))
        .map((st: Node) => String(st.source.value).replace(/^\.\//, ""))
        .filter((to: string) => modules.has(to)),
    );
  }
  const onCycle = new Set<string>();
  const reaches = (from: string, target: string, seen = new Set<string>()): boolean => {
    for (const to of edges.get(from) ?? []) {
      if (to === target) return true;
      if (!seen.has(to) && (seen.add(to), reaches(to, target, seen))) return true;
    }
    return false;
  };
  for (const name of modules.keys()) if (reaches(name, name)) onCycle.add(name);
  return onCycle;
}

/**
 * {@link compileEagerly} over every module of a bundle, with each module's keep-names helpers
 * (`static_names.ts`); a module on an import cycle ({@link inImportCycles}) keeps its declarations.
 */
export function compileBundleEagerly(
  modules: ReadonlyMap<string, string>,
  hints: ReadonlySet<string>,
): Map<string, string> {
  const programs = new Map(
    [...modules].map(([name, source]) => [name, acorn.parse(source, { ecmaVersion: "latest", sourceType: "module" })]),
  );
  const helpers = keepNamesHelpers(programs);
  const cyclic = inImportCycles(modules);
  const out = new Map<string, string>();
  for (const [name, source] of modules) {
    out.set(name, compileEagerly(source, hints, helpers.get(name), !cyclic.has(name)).source);
  }
  return out;
}

/** The committed hints: role -> the source names of the functions its start compiles (`start_hints.json`). */
export type StartHints = Readonly<Record<string, readonly string[]>>;

/** `start_hints.json` beside this module, or no hints when it is absent. */
export async function loadStartHints(path = new URL("./start_hints.json", import.meta.url)): Promise<StartHints> {
  try {
    return JSON.parse(await Deno.readTextFile(path)) as StartHints;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return {};
    throw e;
  }
}
