/**
 * The role launcher: runs a role with its permission flags plus, for a subcommand of `ARG_GRANTS`
 * (`roles/permissions.ts`), read or write access to exactly the paths its command line names (`bcd-node image check
 * --format qcow2 disk.qcow2` may read `disk.qcow2` and nothing else beyond the node's own grant). The `deno.json` task
 * of a role with argument grants runs it from source; the bundled `dist/bcd-<role>/bcd-<role>` runs its bundled copy
 * for those subcommands. It forwards SIGINT, SIGTERM and SIGHUP to the role and exits with the role's exit code.
 *
 * From source it runs `deno` from PATH with the repository's `deno.json` in the directory the task was started from
 * (`INIT_CWD`: a `deno task` itself runs in the repository), so a relative path means what its user meant. As with npm,
 * a task started from within another keeps the outermost one's `INIT_CWD`.
 *
 * usage: launch.ts [--bundle DIR] ROLE [ARGS...]
 *
 * @module
 */
import { fromFileUrl } from "../core/util/path.ts";
import { argGrants, type Executable, EXECUTABLES, roleEntry, roleFlags } from "./permissions.ts";

const _SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/** The command that runs `role` with `argv` and its grants: from source, or from the bundle in `bundleDir`. */
export function launchCommand(
  role: Executable,
  argv: readonly string[],
  bundleDir?: string,
): { cmd: string; args: string[] } {
  const g = argGrants(role, argv);
  const flags = roleFlags(role, { extraRead: g.read, extraWrite: g.write });
  if (bundleDir !== undefined) {
    return {
      cmd: `${bundleDir}/deno`,
      args: [
        "run",
        "--no-config",
        "--no-lock",
        "--node-modules-dir=manual",
        ...flags,
        `${bundleDir}/bcd-${role}.js`,
        ...argv,
      ],
    };
  }
  const root = new URL("../", import.meta.url);
  return {
    cmd: "deno",
    args: [
      "run",
      `--config=${fromFileUrl(new URL("deno.json", root))}`,
      ...flags,
      fromFileUrl(new URL(roleEntry(role), root)),
      ...argv,
    ],
  };
}

function _fail(text: string): never {
  Deno.stderr.writeSync(new TextEncoder().encode(text + "\n"));
  Deno.exit(2);
}

async function _main(argv: string[]): Promise<number> {
  let bundleDir: string | undefined;
  if (argv[0] === "--bundle") {
    bundleDir = argv[1];
    argv = argv.slice(2);
  }
  const [role, ...rest] = argv;
  if (role === undefined || !(EXECUTABLES as readonly string[]).includes(role)) {
    _fail(`launch: unknown role ${JSON.stringify(role ?? "")}; usage: launch.ts [--bundle DIR] ROLE [ARGS...]`);
  }
  let c;
  try {
    c = launchCommand(role as Executable, rest, bundleDir);
  } catch (e) {
    if (e instanceof TypeError) _fail(`bcd-${role}: ${e.message}`);
    throw e;
  }
  const cwd = bundleDir === undefined ? Deno.env.get("INIT_CWD") : undefined;
  const child = new Deno.Command(c.cmd, { args: c.args, cwd, stdin: "inherit", stdout: "inherit", stderr: "inherit" })
    .spawn();
  const forward = _SIGNALS.map((s) => {
    const f = () => {
      try {
        child.kill(s);
      } catch (e) {
        if (!(e instanceof TypeError)) throw e; // the role has already exited
      }
    };
    Deno.addSignalListener(s, f);
    return [s, f] as const;
  });
  const status = await child.status;
  for (const [s, f] of forward) Deno.removeSignalListener(s, f);
  return status.code;
}

if (import.meta.main) {
  Deno.exit(await _main(Deno.args));
}
