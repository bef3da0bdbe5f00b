/**
 * Build wiring: `bundle` (the offline artifact `dist/bcd-<role>/`), `compile` (`deno compile` into
 * `bin/bcd-<role>`, honouring `DENORT_BIN`) and `tasks` (rewrite the role tasks of `deno.json` from
 * `roles/permissions.ts`). Every artifact carries exactly its role's permission flags. The node's root helper is
 * built beside the roles as `dist/bcd-helper/` and `bin/bcd-helper`, with its `helper` task.
 *
 * usage: deno task bundle [ROLE...] | deno task compile [--dry-run] [ROLE...] | build.ts tasks
 * (ROLE: node, site, ramdisk, guest, sim or helper)
 *
 * @module
 */
import { parseArgs } from "node:util";
import {
  ARG_GRANTS,
  type Executable,
  EXECUTABLES,
  LAUNCHER_ENTRY,
  launcherFlags,
  roleEntry,
  roleFlags,
  roleTask,
} from "./permissions.ts";
import { AGENT_DENO_DIR } from "../runtimes/daemon/code_cache.ts";
import { compileBundleEagerly, loadStartHints } from "./eager.ts";
import { denoRebundle, mergeStartChunks } from "./merge_start.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const DENO = Deno.execPath();

/**
 * What every `deno bundle` of a role adds: minified, since a start pays for every byte of the files it loads, whatever
 * they hold (a 1.1 MB comment costs as much CPU as the 1.1 MB generated proto module; the sim's entry went from 1.66 MB
 * to 0.87 MB, its start to first Hello from 2.7x to about 2.1x a bare deno run's CPU: issue 24), with function and class
 * names kept, so that stack traces in the logs and `name`s stay readable. No source map: a linked one is read at load
 * (the sim's start CPU went up by half and its RSS by 10 MiB).
 */
export const BUNDLE_FLAGS: readonly string[] = ["--minify", "--keep-names"];

/**
 * Module files a role loads at run time by URL (Web Workers), which `deno bundle` does not follow: each is bundled on
 * its own beside the role's bundle, under the same relative name the code asks for.
 */
export const WORKER_MODULES: Readonly<
  Record<Executable, readonly { readonly source: string; readonly name: string }[]>
> = {
  node: [],
  site: [],
  ramdisk: [],
  guest: [{ source: "guest/mapping/_writer_thread.ts", name: "_writer_thread.ts" }],
  sim: [],
  helper: [],
  vm: [],
};

/**
 * npm packages with native parts a role needs that `deno bundle` cannot inline: they stay external and their
 * `node_modules` folders are copied beside the bundle.
 */
export const NATIVE_PACKAGES: Readonly<Record<Executable, readonly string[]>> = {
  node: [],
  site: [],
  ramdisk: [],
  guest: [],
  sim: [],
  helper: [],
  vm: [],
};

function _say(line: string): void {
  Deno.stderr.writeSync(new TextEncoder().encode(line + "\n"));
}

async function _run(cmd: string, args: string[], env?: Record<string, string>): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd: ROOT, stdout: "piped", stderr: "piped", env }).output();
  const dec = new TextDecoder();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed (exit ${out.code}):\n${dec.decode(out.stderr)}`);
  }
  return dec.decode(out.stdout);
}

async function _buildId(): Promise<string> {
  try {
    const rev = (await _run("git", ["rev-parse", "--short=12", "HEAD"])).trim();
    const dirty = (await _run("git", ["status", "--porcelain", "--untracked-files=no"])).trim() !== "";
    return dirty ? `${rev}-dirty` : rev;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return "unknown";
    throw e;
  }
}

/** The bundle's warm-up module, which the launcher runs for `bcd-<role> warm-cache` ({@link warmCacheSource}). */
export const WARM_CACHE_MODULE = "warm-cache.js";

/**
 * The directory whose owner gets `<dir>/deno` as `DENO_DIR` from the launcher when the environment names none: the
 * agents' cache dir (`/var/cache/bcd`, 0750 bcd:bcd; its `deno` is the units' `DENO_DIR`, `AGENT_DENO_DIR`). So an
 * agent that no unit starts (the helper's supervisor, an operator's shell as bcd) keeps a warm, writable cache too,
 * while root or anyone else running a launcher keeps Deno's own default and leaves no file of theirs in bcd's cache.
 */
export const AGENT_CACHE_DIR = AGENT_DENO_DIR.slice(0, AGENT_DENO_DIR.lastIndexOf("/"));

/**
 * The source of `warm-cache.js`: one statically analysable `import()` of the entry and of every chunk the bundle has,
 * the lazily imported ones too (the role's own `warm-cache` subcommand reaches its static graph only), so Deno
 * compiles each one and writes its V8 code cache (keyed by the module's URL: the launcher's path, as the unit runs it).
 * Imported, the entry does not run its role (`import.meta.main` is false there) and chunks only define modules: the
 * warm-up opens no journal, socket or helper (`warm_cache_test.ts` runs it with no permission at all). Worker modules
 * and `launch.js` are left out: each runs as a program of its own.
 */
export function warmCacheSource(role: Executable, modules: readonly string[]): string {
  const entry = `bcd-${role}.js`;
  return [
    `// bcd-${role} warm-cache (generated by roles/build.ts): loads every module of the bundle into the V8 code cache.`,
    ...[entry, ...modules.filter((m) => m !== entry).sort()].map((m) => `await import(${JSON.stringify(`./${m}`)});`),
    "",
  ].join("\n");
}

/**
 * The launcher script: runs the bundled JS with the pinned Deno beside it and the role's flags. The subcommands of a
 * role's `ARG_GRANTS` go to the bundled `launch.js` instead, which adds the grant of the paths they name; `warm-cache`
 * runs `warm-cache.js` under the role's flags. Without a `DENO_DIR` in the environment it names one for the owner of
 * {@link AGENT_CACHE_DIR}.
 */
export function launcherScript(role: Executable): string {
  const flags = roleFlags(role).map((f) => `'${f}'`).join(" ");
  const grants = ARG_GRANTS[role];
  if (new Set(grants.map((g) => g.command.length)).size > 1) {
    throw new TypeError(`${role}: the launcher matches argument-granted subcommands of one length only`);
  }
  const launch = launcherFlags('"$here/deno"').map((f) => f.includes('"') ? f : `'${f}'`).join(" ");
  return [
    "#!/bin/sh",
    `# bcd-${role}: runs the bundled ${role} role with its own permission flags (generated by roles/build.ts).`,
    // Reached through a symlink (the package's /usr/sbin/bcd-helper), the launcher finds its bundle where the link
    // points; a directory link on the way (/opt/bcd/current) stays as it is: the unit's path keys the code cache.
    "here=$0",
    'if [ -L "$here" ]; then t=$(readlink -- "$here"); case $t in /*) here=$t ;; *) here=$(dirname -- "$here")/$t ;; esac; fi',
    'here=$(CDPATH= cd -- "$(dirname -- "$here")" && pwd)',
    `# V8's code cache lives in DENO_DIR: unless the environment names one, ${AGENT_DENO_DIR} for the owner of`,
    `# ${AGENT_CACHE_DIR} (bcd, the units' user); anyone else keeps Deno's default (roles/build.ts AGENT_CACHE_DIR).`,
    `if [ -z "\${DENO_DIR:-}" ] && [ -d ${AGENT_CACHE_DIR} ] && [ -O ${AGENT_CACHE_DIR} ]; then`,
    `  DENO_DIR=${AGENT_DENO_DIR}`,
    "  export DENO_DIR",
    "fi",
    `main="$here/bcd-${role}.js"`,
    "# warm-cache: compile the entry and every chunk (the lazy ones too) into that cache, and run nothing else.",
    `[ "\${1:-}" = warm-cache ] && main="$here/${WARM_CACHE_MODULE}"`,
    ...(grants.length === 0 ? [] : [
      "# Subcommands that get access to exactly the paths they name (roles/permissions.ts ARG_GRANTS).",
      `case "${grants[0]!.command.map((_, i) => `$${i + 1}`).join(" ")}" in`,
      `${grants.map((g) => `'${g.command.join(" ")}'`).join("|")})`,
      `  exec "$here/deno" run --no-config --no-lock ${launch} "$here/launch.js" --bundle "$here" ${role} "$@" ;;`,
      "esac",
    ]),
    `exec "$here/deno" run --no-config --no-lock --node-modules-dir=manual ${flags} "$main" "$@"`,
    "",
  ].join("\n");
}

async function _copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    const a = `${from}/${e.name}`;
    const b = `${to}/${e.name}`;
    if (e.isDirectory) await _copyTree(a, b);
    else if (e.isFile) await Deno.copyFile(a, b);
    else if (e.isSymlink) await Deno.symlink(await Deno.readLink(a), b);
  }
}

/**
 * Bundles one role into `<out>/bcd-<role>/` (`out` defaults to the repository's `dist/`); `version` makes it a release
 * of that version (`AGENT_VERSION`), for the self-update. The functions the role's start runs (`start_hints.json`)
 * are compiled with their modules (`eager.ts`) and names are written into the source rather than set as it runs
 * (`static_names.ts`), unless `startHints` is false: the bundle as esbuild wrote it (what `deno task start:hints` reads).
 */
export async function bundleRole(
  role: Executable,
  build: string,
  out = `${ROOT}dist`,
  opts: { version?: string; startHints?: boolean } = {},
): Promise<string> {
  const dir = `${out}/bcd-${role}`;
  await Deno.remove(dir, { recursive: true }).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
  await Deno.mkdir(dir, { recursive: true });
  const js = `${dir}/bcd-${role}.js`;
  const external = NATIVE_PACKAGES[role].flatMap((p) => ["--external", `npm:${p}`]);
  // Split at dynamic imports: what a role loads only when it needs it (the OpenTelemetry SDK, ...) goes into chunk
  // files beside the entry, which the runtime neither parses nor links at start (issue 24).
  await _run(DENO, [
    "bundle",
    "--quiet",
    "--platform",
    "deno",
    "--packages",
    "bundle",
    "--code-splitting",
    ...BUNDLE_FLAGS,
    ...external,
    "--outdir",
    dir,
    roleEntry(role),
  ]);
  // The entry keeps its source name (roles/sim.ts -> sim.js); it is renamed, which only holds while no chunk imports it.
  const entry = roleEntry(role).replace(/^.*\//, "").replace(/\.ts$/, ".js");
  await Deno.rename(`${dir}/${entry}`, js);
  const texts = new Map<string, string>();
  for (const e of await Array.fromAsync(Deno.readDir(dir))) {
    if (!e.isFile || !e.name.endsWith(".js")) continue;
    const text = await Deno.readTextFile(`${dir}/${e.name}`);
    if (text.includes(`"./${entry}"`)) {
      throw new Error(`${dir}/${e.name} imports the entry ${entry}, renamed bcd-${role}.js`);
    }
    const versioned = opts.version === undefined ? text : text.replaceAll("__BCD_VERSION__", opts.version);
    texts.set(e.name, versioned.replaceAll("__BCD_BUILD__", build));
  }
  for (const name of texts.keys()) await Deno.remove(`${dir}/${name}`);
  // The chunks the start loads, one module (merge_start.ts).
  const { modules: merged } = await mergeStartChunks(texts, `bcd-${role}.js`, denoRebundle);
  // As esbuild wrote it when `startHints` is false: what `deno task start:hints` reads its declarations from.
  const rewritten = opts.startHints === false
    ? merged
    : compileBundleEagerly(merged, new Set((await loadStartHints())[role] ?? []));
  for (const [name, source] of rewritten) await Deno.writeTextFile(`${dir}/${name}`, source);
  const modules = [...merged.keys()];
  await Deno.writeTextFile(`${dir}/${WARM_CACHE_MODULE}`, warmCacheSource(role, modules));
  if (ARG_GRANTS[role].length > 0) {
    await _run(DENO, [
      "bundle",
      "--quiet",
      "--platform",
      "deno",
      ...BUNDLE_FLAGS,
      "-o",
      `${dir}/launch.js`,
      LAUNCHER_ENTRY,
    ]);
  }
  for (const w of WORKER_MODULES[role]) {
    await _run(DENO, ["bundle", "--quiet", "--platform", "deno", ...BUNDLE_FLAGS, "-o", `${dir}/${w.name}`, w.source]);
  }
  for (const p of NATIVE_PACKAGES[role]) await _copyTree(`${ROOT}node_modules/${p}`, `${dir}/node_modules/${p}`);
  // A hard link where the filesystem allows it: six executables need not cost six copies of a 95 MB binary.
  try {
    await Deno.link(DENO, `${dir}/deno`);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotSupported || e instanceof Error && /cross-device|EXDEV/i.test(e.message))) {
      throw e;
    }
    await Deno.copyFile(DENO, `${dir}/deno`);
    await Deno.chmod(`${dir}/deno`, 0o755);
  }
  await Deno.writeTextFile(`${dir}/bcd-${role}`, launcherScript(role), { mode: 0o755 });
  await Deno.chmod(`${dir}/bcd-${role}`, 0o755);
  return dir;
}

/** The `deno compile` argument list of a role (from its bundle, so the build id is baked in). */
export function compileArgs(role: Executable): string[] {
  const includes = [
    ...NATIVE_PACKAGES[role].flatMap((p) => ["--include", `dist/bcd-${role}/node_modules/${p}`]),
    ...WORKER_MODULES[role].flatMap((w) => ["--include", `dist/bcd-${role}/${w.name}`]),
  ];
  return [
    "compile",
    "--no-config",
    ...roleFlags(role),
    ...includes,
    "--output",
    `bin/bcd-${role}`,
    `dist/bcd-${role}/bcd-${role}.js`,
  ];
}

async function _writeTasks(): Promise<void> {
  const path = `${ROOT}deno.json`;
  const cfg = JSON.parse(await Deno.readTextFile(path)) as { tasks: Record<string, string> };
  // The executables' tasks first, in their order; every other task after them as it was.
  const rest = Object.entries(cfg.tasks).filter(([k]) => !(EXECUTABLES as readonly string[]).includes(k));
  cfg.tasks = Object.fromEntries([...EXECUTABLES.map((e) => [e, roleTask(e)] as const), ...rest]);
  await Deno.writeTextFile(path, JSON.stringify(cfg, null, 2) + "\n");
}

function _roles(names: string[]): Executable[] {
  if (names.length === 0) return [...EXECUTABLES];
  for (const n of names) if (!EXECUTABLES.includes(n as Executable)) throw new TypeError(`unknown role "${n}"`);
  return names as Executable[];
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    options: { "dry-run": { type: "boolean" } },
    allowPositionals: true,
  });
  const [verb, ...rest] = positionals;
  const build = await _buildId();
  if (verb === "bundle") {
    for (const role of _roles(rest)) _say(`bundled ${await bundleRole(role, build)}`);
  } else if (verb === "compile") {
    await Deno.mkdir(`${ROOT}bin`, { recursive: true });
    for (const role of _roles(rest)) {
      const args = compileArgs(role);
      if (values["dry-run"]) {
        _say(["deno", ...args].join(" "));
        continue;
      }
      await bundleRole(role, build);
      const denort = Deno.env.get("DENORT_BIN");
      _say(`compiling bin/bcd-${role}${denort ? ` with DENORT_BIN=${denort}` : ""}`);
      // deno compile reads DENORT_BIN itself; it is passed through the environment unchanged.
      await _run(DENO, args);
    }
  } else if (verb === "tasks") {
    await _writeTasks();
  } else {
    _say("usage: build.ts bundle [ROLE...] | compile [--dry-run] [ROLE...] | tasks");
    Deno.exit(2);
  }
}
