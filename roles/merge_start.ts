/**
 * The chunks a role's start loads, merged into one module at build time (issue 24).
 *
 * `deno bundle --code-splitting` puts every set of modules that the entry shares with a lazily imported chunk into a
 * chunk file of its own, so each new dynamic-import boundary that takes code out of the start also gives the start
 * more files to load: the node's start read 29 files for 312 KB, and each module file costs the runtime ~50-100 µs
 * (its resolution, load, instantiation, code-cache look-up) whatever it holds. After the split, the chunks the entry
 * reaches through static imports (every one of them runs at start anyway) are bundled again into one module,
 * `<entry>-start.js`, which exports each chunk's exports under a name of its own; the entry and every lazy chunk import
 * from it instead. The start then loads two files: the entry and that module.
 *
 * The entry stays a module apart, importing the merged one: a role's entry awaits its command at top level
 * (`Deno.exit(await runCli(...))`), and a lazy chunk that imported the module holding that await would wait for it to
 * finish evaluating, while it waits for the chunk: the start would hang. The merged module has no top-level await
 * (checked here: where a start chunk has one, nothing is merged), so a lazy chunk imports it at any time.
 *
 * What stays as it was: the order in which the chunks' code runs (the merged module lists them in the order the
 * entry's imports reach them, and esbuild keeps ES module evaluation order), each chunk's exports as one binding
 * shared by the start and the lazy chunks (one module instance: the merged one), the names the first pass kept
 * (`--keep-names` wrote each as a helper call, which the second pass keeps as code; it does not add its own), and the
 * lazy chunks' files (the second pass marks them external, so a dynamic import still loads its chunk when first used).
 *
 * @module
 */
import * as acorn from "acorn";
import { applyEdits, type Edit, walk } from "./static_names.ts";

// deno-lint-ignore no-explicit-any
type Node = any;

/** What {@link mergeStartChunks} did. */
export interface MergeResult {
  /** The bundle's modules (file name -> source) after the merge. */
  readonly modules: Map<string, string>;
  /** The merged module's file name, or null where fewer than two chunks were on the start (nothing merged). */
  readonly merged: string | null;
  /** The chunks merged into it, in the order they run. */
  readonly chunks: readonly string[];
}

/**
 * Bundles `input` (a file in `dir`) into `output`, every specifier of `external` left as it is written: the bundle's
 * other modules (`./name`) and what the first pass left external (`npm:` packages with native parts, `node:` modules).
 */
export type Rebundle = (dir: string, input: string, output: string, external: readonly string[]) => Promise<void>;

/**
 * The second `deno bundle`: minified as the first, without `--keep-names`: the first pass's helper calls, kept as
 * code, give the source names.
 */
export const denoRebundle: Rebundle = async (dir, input, output, external) => {
  const args = [
    "bundle",
    "--quiet",
    "--no-config",
    "--no-lock",
    "--platform",
    "deno",
    "--minify",
    ...external.flatMap((e) => ["--external", e]),
    "-o",
    `${dir}/${output}`,
    `${dir}/${input}`,
  ];
  const out = await new Deno.Command(Deno.execPath(), { args, cwd: dir, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(
      `deno bundle of the start chunks failed (exit ${out.code}):\n${new TextDecoder().decode(out.stderr)}`,
    );
  }
};

function _parse(source: string): Node {
  return acorn.parse(source, { ecmaVersion: "latest", sourceType: "module" });
}

/** A bundle module's own file name from a specifier (`"./chunk-X.js"`), or null for anything else. */
function _local(spec: unknown, modules: ReadonlyMap<string, string>): string | null {
  if (typeof spec !== "string" || !spec.startsWith("./")) return null;
  const name = spec.slice(2);
  return modules.has(name) ? name : null;
}

function _isStatic(st: Node): boolean {
  return st.source != null && /^(Import|ExportNamed|ExportAll)Declaration$/.test(st.type);
}

/** Every `import("...")` with a literal specifier under `node`. */
function _dynamicImports(node: Node): string[] {
  const out: string[] = [];
  walk(node, (n) => {
    if (n.type === "ImportExpression" && n.source.type === "Literal") out.push(String(n.source.value));
  });
  return out;
}

const _FUNCTION =
  /^(FunctionDeclaration|FunctionExpression|ArrowFunctionExpression|MethodDefinition|PropertyDefinition|StaticBlock)$/;

/** Whether `program` awaits at its own top level (an `await` or `for await` outside any function). */
function _awaitsAtTopLevel(program: Node): boolean {
  let found = false;
  walk(program, (n, ancestors) => {
    if (n.type !== "AwaitExpression" && !(n.type === "ForOfStatement" && n.await)) return;
    if (!ancestors.some((a) => _FUNCTION.test(a.type))) found = true;
  });
  return found;
}

function _name(n: Node): string {
  return n.type === "Identifier" ? n.name : String(n.value);
}

/** The names a chunk exports (`export{a as b}` lists and `export` declarations). */
function _exports(file: string, program: Node): string[] {
  const names: string[] = [];
  for (const st of program.body) {
    if (st.type === "ExportAllDeclaration" || st.type === "ExportDefaultDeclaration") {
      throw new Error(`${file}: ${st.type} in a start chunk; the merge handles named exports only`);
    }
    if (st.type !== "ExportNamedDeclaration") continue;
    if (st.source) throw new Error(`${file}: a re-export from ${st.source.value} in a start chunk`);
    for (const s of st.specifiers) names.push(_name(s.exported));
    const d = st.declaration;
    if (d?.type === "FunctionDeclaration" || d?.type === "ClassDeclaration") names.push(d.id.name);
    else if (d?.type === "VariableDeclaration") {
      for (const v of d.declarations) {
        if (v.id.type !== "Identifier") throw new Error(`${file}: a destructuring export in a start chunk`);
        names.push(v.id.name);
      }
    }
  }
  return names;
}

/**
 * The chunks the entry reaches through static imports, in the order their code first runs (ES module evaluation:
 * each module's imports in order, depth first, a module after its imports).
 */
export function startChunks(modules: ReadonlyMap<string, string>, entry: string): string[] {
  const programs = new Map<string, Node>();
  const order: string[] = [];
  const seen = new Set<string>([entry]);
  const visit = (file: string): void => {
    let program = programs.get(file);
    if (!program) programs.set(file, program = _parse(modules.get(file)!));
    for (const st of program.body) {
      if (!_isStatic(st)) continue;
      const to = _local(st.source.value, modules);
      if (to === null || seen.has(to)) continue;
      seen.add(to);
      visit(to);
      order.push(to);
    }
  };
  visit(entry);
  return order;
}

/** The merged export name of chunk number `i`'s export `name`. */
function _mergedName(i: number, name: string): string {
  return `c${i}$${
    /^[A-Za-z_$][\w$]*$/.test(name) ? name : [...name].map((c) => c.codePointAt(0)!.toString(16)).join("_")
  }`;
}

/**
 * Rewrites the imports and re-exports of `file` that name a merged chunk so they name the merged module, each
 * binding under its merged name. A chunk imported as a namespace or by a dynamic `import()` cannot be: the build
 * fails, naming the file.
 */
function _retarget(
  file: string,
  source: string,
  renames: ReadonlyMap<string, ReadonlyMap<string, string>>,
  merged: string,
  modules: ReadonlyMap<string, string>,
): string {
  const program = _parse(source);
  const edits: Edit[] = [];
  for (const st of program.body) {
    if (!_isStatic(st)) continue;
    const to = _local(st.source.value, modules);
    const names = to === null ? undefined : renames.get(to);
    if (!names) continue;
    if (st.type === "ExportAllDeclaration") throw new Error(`${file}: export * from the start chunk ${to}`);
    const parts = st.specifiers.map((s: Node) => {
      if (s.type === "ImportNamespaceSpecifier" || s.type === "ImportDefaultSpecifier") {
        throw new Error(`${file}: ${s.type} of the start chunk ${to}`);
      }
      const imported = _name(st.type === "ImportDeclaration" ? s.imported : s.local);
      const as = _name(st.type === "ImportDeclaration" ? s.local : s.exported);
      const name = names.get(imported);
      if (name === undefined) throw new Error(`${file}: imports ${imported}, which ${to} does not export`);
      return `${name} as ${as}`;
    });
    const kind = st.type === "ImportDeclaration" ? "import" : "export";
    const text = parts.length === 0 && kind === "import"
      ? `import${JSON.stringify(`./${merged}`)};`
      : `${kind}{${parts.join(",")}}from${JSON.stringify(`./${merged}`)};`;
    edits.push({ start: st.start, end: st.end, text });
  }
  for (const spec of _dynamicImports(program)) {
    const to = _local(spec, modules);
    if (to !== null && renames.has(to)) throw new Error(`${file}: import("${spec}") of the start chunk ${to}`);
  }
  return edits.length === 0 ? source : applyEdits(source, 0, source.length, edits);
}

/**
 * Merges the chunks that `entry` (a module of `modules`, file name -> source, importing each other as `"./name"`)
 * loads at start into `<entry base>-start.js`, through `rebundle` (a second `deno bundle`, every other module
 * external), and points the entry and every other module at it. Fewer than two such chunks: nothing to gain, the
 * modules come back as they were.
 */
export async function mergeStartChunks(
  modules: ReadonlyMap<string, string>,
  entry: string,
  rebundle: Rebundle,
): Promise<MergeResult> {
  const unchanged = { modules: new Map(modules), merged: null, chunks: [] };
  const chunks = startChunks(modules, entry);
  // A chunk that awaits at top level cannot join (a lazy chunk importing the merged module would wait on it), and
  // left apart it could import the merged module that imports it, a cycle the split bundle did not have: no merge.
  if (chunks.length < 2 || chunks.some((c) => _awaitsAtTopLevel(_parse(modules.get(c)!)))) return unchanged;
  const mergedSet = new Set(chunks);
  const merged = entry.replace(/\.js$/, "") + "-start.js";
  const input = "merge-input.js";
  for (const name of [merged, input]) {
    if (modules.has(name)) throw new Error(`the bundle already has a module ${name}`);
  }
  const renames = new Map<string, Map<string, string>>();
  chunks.forEach((c, i) => {
    renames.set(c, new Map(_exports(c, _parse(modules.get(c)!)).map((n) => [n, _mergedName(i, n)])));
  });
  const dir = await Deno.makeTempDir({ prefix: "bcd-merge-start-" });
  try {
    for (const [name, source] of modules) await Deno.writeTextFile(`${dir}/${name}`, source);
    const lines = chunks.map((c) => {
      const list = [...renames.get(c)!].map(([n, m]) => `${JSON.stringify(n)} as ${m}`);
      return list.length === 0
        ? `import ${JSON.stringify(`./${c}`)};`
        : `export {${list.join(", ")}} from ${JSON.stringify(`./${c}`)};`;
    });
    await Deno.writeTextFile(`${dir}/${input}`, lines.join("\n") + "\n");
    // The other modules, and every specifier of the merged chunks that names no module of the bundle (the second
    // pass would otherwise bundle an `npm:` package that the first left external on purpose).
    const external = new Set([...modules.keys()].filter((m) => !mergedSet.has(m)).map((m) => `./${m}`));
    for (const c of chunks) {
      const program = _parse(modules.get(c)!);
      const specs = [
        ...program.body.filter(_isStatic).map((st: Node) => String(st.source.value)),
        ..._dynamicImports(program),
      ];
      for (const spec of specs) if (_local(spec, modules) === null) external.add(spec);
    }
    await rebundle(dir, input, merged, [...external]);
    const text = await Deno.readTextFile(`${dir}/${merged}`);
    const out = new Map<string, string>();
    for (const [name, source] of modules) {
      if (mergedSet.has(name)) continue;
      out.set(name, _retarget(name, source, renames, merged, modules));
    }
    // The merged module must import nothing it merged, and must not import the entry.
    out.set(merged, _retarget(merged, text, renames, merged, modules));
    for (const st of _parse(out.get(merged)!).body) {
      if (_isStatic(st) && _local(st.source.value, modules) === entry) throw new Error(`${merged} imports ${entry}`);
    }
    return { modules: out, merged, chunks };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
