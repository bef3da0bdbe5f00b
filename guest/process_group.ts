/**
 * Programs in process groups of their own. `Deno.Command` has no setsid option, so a program is spawned through
 * util-linux `setsid`, which (since Deno's child is no group leader) calls setsid(2) and execs the program in the
 * same process: the child's PID is the program's, and its process group and session are that PID. The group is
 * killed as a whole with `Deno.kill(-pgid, signal)`.
 *
 * Deno collects a child's status itself (its `status` promise), so the group is killed right after the status
 * arrives, not before the zombie is reaped as the seed's worker does: a descendant that stayed in the group keeps
 * the group's ID from reuse, so the kill reaches it; once nothing of the group is left the kill finds no process.
 *
 * @module
 */

/** errno values the worker reports for a launch it refuses. */
export const ERRNO = { ENOENT: 2, EAGAIN: 11, ENOMEM: 12, EACCES: 13 } as const;

/** The program path as setsid must see it: with a slash, so that execvp never searches PATH. */
export function programPath(path: string): string {
  return path.includes("/") ? path : `./${path}`;
}

/** Why a program cannot be spawned, as an errno, or null: a missing file, a directory, no execute bit. */
export function launchProblem(path: string): number | null {
  let st: Deno.FileInfo;
  try {
    st = Deno.statSync(programPath(path));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return ERRNO.ENOENT;
    if (e instanceof Deno.errors.PermissionDenied) return ERRNO.EACCES;
    throw e;
  }
  if (!st.isFile || ((st.mode ?? 0o777) & 0o111) === 0) return ERRNO.EACCES;
  return null;
}

/** Spawns `argv` as the leader of a new process group (and session). */
export function spawnInGroup(argv: readonly string[], stdin: boolean): Deno.ChildProcess {
  const [path, ...args] = argv;
  return new Deno.Command("setsid", {
    args: [programPath(path!), ...args],
    stdin: stdin ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** Signals every process of group `pgid`; false when none is left. */
export function killGroup(pgid: number, signal: Deno.Signal = "SIGKILL"): boolean {
  try {
    Deno.kill(-pgid, signal);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || (e instanceof Error && /ESRCH|No such process/.test(e.message))) {
      return false;
    }
    throw e;
  }
}
