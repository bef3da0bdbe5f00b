/**
 * The argument grants (`roles/permissions.ts` tells the whole story): the subcommands that need access to the paths
 * their user names, which the launcher grants per run and `roles/_cli.ts` checks before such a subcommand runs. Apart
 * from the permission tables, so that a role's start (which runs `_cli.ts`) does not load them (issue 24).
 *
 * @module
 */
import { parseArgs } from "../core/util/args.ts";
import type { Executable } from "./executables.ts";

/** A subcommand that needs access to the paths its user names, granted per run by the launcher. */
export interface ArgGrant {
  /** The subcommand's words after the executable, e.g. `["image", "check"]`. */
  readonly command: readonly string[];
  /** Its options that take a value (the rest are boolean), so the positionals can be told apart. */
  readonly valueOptions: readonly string[];
  /** Read access to its positionals (`"positionals"`) and to these options' values. */
  readonly read?: readonly string[];
  /** Write (and read) access to its positionals (`"positionals"`) and to these options' values. */
  readonly write?: readonly string[];
}

/**
 * The argument grants of each executable. The node's image checks open exactly the named image (an overlay's backing
 * file is compared by name, never opened: `core/images/overlay.ts`); the guest reads everything already, and its
 * `bundle install` writes exactly the `--root` it is given (the flip link is made by `ln -s`, which the guest may
 * run, since `Deno.symlink` needs an unscoped `--allow-write`).
 */
export const ARG_GRANTS: Readonly<Record<Executable, readonly ArgGrant[]>> = {
  node: [
    { command: ["image", "check"], valueOptions: ["format"], read: ["positionals"] },
    { command: ["image", "check-overlay"], valueOptions: ["backing", "backing-format"], read: ["positionals"] },
  ],
  site: [],
  ramdisk: [],
  guest: [{ command: ["bundle", "install"], valueOptions: ["root", "version"], write: ["root"] }],
  sim: [],
  helper: [],
  vm: [],
};

/** The paths a run of a subcommand is granted beyond its role's flags. */
export interface Grants {
  readonly read: string[];
  readonly write: string[];
}

/** The grant of `argv` (a command line after the executable), or `null` when its subcommand has none. */
export function argGrantOf(role: Executable, argv: readonly string[]): ArgGrant | null {
  return ARG_GRANTS[role].find((g) => g.command.every((w, i) => argv[i] === w)) ?? null;
}

/**
 * The paths `argv` names that its subcommand is granted ({@link ARG_GRANTS}); empty lists for other subcommands.
 * Options are read as `node:util` parseArgs reads them (`--opt V`, `--opt=V`, `--` ends them; `core/util/args.ts`), so the grant names
 * exactly what the subcommand will open. A path Deno's comma-separated flags cannot spell (one with a `,`) is a
 * `TypeError`; an empty one is left to the subcommand's own usage check.
 */
export function argGrants(role: Executable, argv: readonly string[]): Grants {
  const g = argGrantOf(role, argv);
  if (g === null) return { read: [], write: [] };
  const options = Object.fromEntries(g.valueOptions.map((o) => [o, { type: "string" as const }]));
  const { values, positionals } = parseArgs({
    args: argv.slice(g.command.length) as string[],
    options,
    allowPositionals: true,
    strict: false,
  });
  const pick = (what: readonly string[] | undefined): string[] =>
    (what ?? []).flatMap((w) => {
      const v = w === "positionals" ? positionals : [values[w]];
      return v.filter((p): p is string => typeof p === "string" && p !== "");
    });
  const grants = { read: pick(g.read), write: pick(g.write) };
  for (const p of [...grants.read, ...grants.write]) {
    if (p.includes(",")) {
      throw new TypeError(
        `${g.command.join(" ")}: the path ${JSON.stringify(p)} contains ",", which a Deno permission flag cannot name`,
      );
    }
  }
  return grants;
}
