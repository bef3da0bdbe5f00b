/**
 * The command-line frame every role shares: subcommand dispatch with `node:util` parseArgs' grammar (bcd's own
 * `core/util/args.ts`: `node:util` costs an agent's start ~10 ms, issue 24), `version` and `help`,
 * and the exit codes of DESIGN.md (0 ok, 1 internal error, 2 usage, 3 refused).
 *
 * @module
 */
import { kindsForRole, type Role } from "../core/commands/kinds.ts";
// The two tables alone: core/helper/mod.ts also loads the argument checks and codec, which a role's CLI never runs.
import { HELPER_OPS } from "../core/helper/protocol.ts";
import { HELPER_OPS_BY_ROLE } from "../core/helper/roles.ts";
import { AGENT_VERSION, BUILD, PROTOCOLS } from "../core/version.ts";
import { type Options, parseArgs } from "../core/util/args.ts";
import { argGrants } from "./arg_grants.ts";

/** An executable's name: a role, or an auxiliary tool beside one (`helper`: the agents' root helper). */
export type CliName = Role | "helper";

export const EXIT_OK = 0;
export const EXIT_INTERNAL = 1;
export const EXIT_USAGE = 2;
export const EXIT_REFUSED = 3;

/** A usage mistake: exit 2 with a one-line reason. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** A daemon that cannot start (its helper is unreachable, say): exit 1 with a one-line reason, no stack. */
export class StartRefused extends Error {
  override name = "StartRefused";
}

/** One subcommand of a role. */
export interface Subcommand {
  /** One line for `help`. */
  readonly summary: string;
  /** The subcommand's own flags (`node:util` parseArgs' option specs, without defaults). */
  readonly options?: Options;
  /** Whether positional arguments are allowed. */
  readonly positionals?: boolean;
  /** Nested subcommands (`image check`, `journal inspect`). */
  readonly sub?: Readonly<Record<string, Subcommand>>;
  run?(args: { values: Record<string, unknown>; positionals: string[] }): Promise<number> | number;
}

/**
 * The JSON `version` prints: the helper lists its protocol's ops (and those it answers for each role it may serve)
 * where a role lists its command kinds. Every kind of the role's table is listed, each with `handled`: whether this
 * build has a handler for it (the kinds `Hello` advertises); a kind that is not handled is answered `UNSUPPORTED`.
 * `handled` is the role wiring's list (`RoleWiring.handles`, checked against the registry when the daemon starts).
 */
export function versionInfo(role: CliName, handled: ReadonlySet<string> = new Set()): Record<string, unknown> {
  const base = { role, version: AGENT_VERSION, build: BUILD, protocols: PROTOCOLS };
  if (role === "helper") return { ...base, kinds: [], ops: [...HELPER_OPS], ops_by_role: HELPER_OPS_BY_ROLE };
  return {
    ...base,
    kinds: kindsForRole(role).map((k) => ({
      kind: k.kind,
      lane: k.lane,
      flags: k.flags,
      handled: handled.has(k.kind),
    })),
  };
}

/** The `version` subcommand of a role; `handled` names the kinds its build handles. */
export function versionCommand(role: CliName, handled: readonly string[] = []): Subcommand {
  return {
    summary: "print role, build, protocol versions and registered command kinds (each marked handled or not) as JSON",
    run: () => {
      printOut(JSON.stringify(versionInfo(role, new Set(handled))));
      return EXIT_OK;
    },
  };
}

/**
 * `warm-cache`: loads what every start loads (the role's static module graph) and lets Deno store the compiled code in
 * `DENO_DIR` before exiting 0; nothing else. Deno writes a module's V8 code cache on a turn of the event loop after
 * evaluation, which `version` (it exits at once) never reaches. Run where a host gets a new build
 * (`runtimes/daemon/code_cache.ts`), so the agent's next start compiles nothing (issue 24).
 */
const WARM_CACHE: Subcommand = {
  summary: "load the role's code and store its compiled form in DENO_DIR (the V8 code cache), then exit",
  run: async () => {
    await new Promise((r) => setTimeout(r, 0));
    return EXIT_OK;
  },
};

function _write(fd: "out" | "err", text: string): void {
  const bytes = new TextEncoder().encode(text.endsWith("\n") ? text : text + "\n");
  (fd === "out" ? Deno.stdout : Deno.stderr).writeSync(bytes);
}

/** Prints one line on stdout (the CLI's result channel). */
export function printOut(text: string): void {
  _write("out", text);
}

function _help(role: CliName, commands: Readonly<Record<string, Subcommand>>, prefix: string[]): string {
  const lines = [`usage: bcd-${role} ${[...prefix, "<command>"].join(" ")} [flags]`, "", "commands:"];
  const walk = (cmds: Readonly<Record<string, Subcommand>>, path: string[]) => {
    for (const [name, c] of Object.entries(cmds)) {
      const full = [...path, name];
      if (c.run) lines.push(`  ${full.join(" ").padEnd(28)} ${c.summary}`);
      if (c.sub) walk(c.sub, full);
    }
  };
  walk(commands, prefix);
  return lines.join("\n");
}

/**
 * Refuses, naming the path, a subcommand of `ARG_GRANTS` (`roles/permissions.ts`) whose run lacks the grant of a path
 * it names: run without its launcher, e.g. as a compiled binary (whose flags are fixed), it would otherwise fail
 * half-way on a raw permission error.
 */
function _checkGrants(role: CliName, argv: string[]): void {
  let g;
  try {
    g = argGrants(role, argv);
  } catch (e) {
    if (e instanceof TypeError) throw new UsageError(e.message, { cause: e });
    throw e;
  }
  const want = [
    ...g.read.map((path) => ({ name: "read" as const, path })),
    ...g.write.map((path) => ({ name: "write" as const, path })),
  ];
  for (const d of want) {
    if (Deno.permissions.querySync(d).state !== "granted") {
      throw new StartRefused(
        `${argv.slice(0, 2).join(" ")} needs ${d.name} access to ${JSON.stringify(d.path)}, which this run's ` +
          `permission flags do not grant; run it through its launcher (deno task ${role}, dist/bcd-${role}/bcd-${role}), ` +
          "which grants exactly the paths a command names (a compiled binary's flags are fixed)",
      );
    }
  }
}

/**
 * Runs a role's CLI with `argv` and returns the exit code; `version` and `help` are added for every role (a daemon
 * role's `commands` bring their own `version`, which knows the kinds the role handles).
 */
export async function runCli(
  role: CliName,
  argv: string[],
  commands: Readonly<Record<string, Subcommand>>,
): Promise<number> {
  const all: Record<string, Subcommand> = {
    version: versionCommand(role),
    "warm-cache": WARM_CACHE,
    help: {
      summary: "list the subcommands",
      run: () => {
        printOut(_help(role, all, []));
        return EXIT_OK;
      },
    },
    ...commands,
  };
  try {
    let cmds: Readonly<Record<string, Subcommand>> = all;
    let rest = argv;
    const path: string[] = [];
    for (;;) {
      const name = rest[0];
      if (name === undefined || name === "--help" || name === "-h") {
        if (path.length === 0 && name === undefined) throw new UsageError(`no command given; try "bcd-${role} help"`);
        printOut(_help(role, cmds, path));
        return name === undefined ? EXIT_USAGE : EXIT_OK;
      }
      const cmd = Object.hasOwn(cmds, name) ? cmds[name] : undefined;
      if (cmd === undefined) throw new UsageError(`unknown command "${[...path, name].join(" ")}"`);
      path.push(name);
      rest = rest.slice(1);
      if (cmd.sub && (rest.length === 0 || Object.hasOwn(cmd.sub, rest[0]!) || !cmd.run)) {
        if (rest.length === 0 && !cmd.run) throw new UsageError(`"${path.join(" ")}" needs a subcommand`);
        if (rest.length > 0 && !Object.hasOwn(cmd.sub, rest[0]!) && !cmd.run) {
          throw new UsageError(`unknown command "${[...path, rest[0]].join(" ")}"`);
        }
        if (rest.length > 0 && Object.hasOwn(cmd.sub, rest[0]!)) {
          cmds = cmd.sub;
          continue;
        }
      }
      if (!cmd.run) throw new UsageError(`"${path.join(" ")}" needs a subcommand`);
      let parsed;
      try {
        parsed = parseArgs({
          args: rest,
          options: { help: { type: "boolean", short: "h" }, ...(cmd.options ?? {}) },
          allowPositionals: cmd.positionals ?? false,
          strict: true,
        });
      } catch (e) {
        const msg = e instanceof Error ? e.message.split("\n")[0] : String(e);
        throw new UsageError(`${path.join(" ")}: ${msg}`, { cause: e });
      }
      if (parsed.values.help) {
        printOut(`bcd-${role} ${path.join(" ")}: ${cmd.summary}`);
        return EXIT_OK;
      }
      _checkGrants(role, [...path, ...rest]);
      return await cmd.run({ values: parsed.values as Record<string, unknown>, positionals: parsed.positionals });
    }
  } catch (e) {
    if (e instanceof UsageError) {
      _write("err", `bcd-${role}: ${e.message}`);
      return EXIT_USAGE;
    }
    if (e instanceof StartRefused) {
      _write("err", `bcd-${role}: ${e.message}`);
      return EXIT_INTERNAL;
    }
    _write("err", `bcd-${role}: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return EXIT_INTERNAL;
  }
}
