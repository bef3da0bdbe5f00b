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
import { setprivDrop } from "../core/setpriv.ts";

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

/**
 * Who an execution runs as (seed 004 §(c), the boundary's second leg): a non-root uid and gid, no supplementary
 * groups, and an empty capability set (inheritable, ambient and bounding sets cleared, no new privileges), so a
 * program cannot write, chmod or rename in the root-owned config tree.
 */
export interface ExecIdentity {
  readonly uid: number;
  readonly gid: number;
}

/** The identity executions get when the agent runs as root and none is configured: `nobody`/`nogroup`. */
export const DEFAULT_EXEC_IDENTITY: ExecIdentity = { uid: 65534, gid: 65534 };

/** Checks an identity; uid 0 is refused with the seed's words. */
export function checkExecIdentity(id: ExecIdentity): ExecIdentity {
  if (!Number.isSafeInteger(id.uid) || id.uid < 0 || id.uid > 0xfffffffe) throw new RangeError(`exec uid ${id.uid}`);
  if (!Number.isSafeInteger(id.gid) || id.gid < 0 || id.gid > 0xfffffffe) throw new RangeError(`exec gid ${id.gid}`);
  if (id.uid === 0) throw new RangeError("exec uid 0 is refused: the guest supervisor never runs an exec as root");
  return id;
}

/**
 * Spawns `argv` as the leader of a new process group (and session). With an identity, util-linux `setpriv` drops to
 * it first (`--reuid/--regid --clear-groups --inh-caps=-all --ambient-caps=-all --bounding-set=-all --no-new-privs`),
 * then execs `setsid`, which execs the program: the child's PID is still the program's.
 */
export function spawnInGroup(argv: readonly string[], stdin: boolean, identity?: ExecIdentity): Deno.ChildProcess {
  const [path, ...args] = argv;
  const group = [programPath(path!), ...args];
  const drop = identity === undefined ? [] : [...setprivDrop(identity.uid, identity.gid), "--", "setsid"];
  return new Deno.Command(identity === undefined ? "setsid" : "setpriv", {
    args: [...drop, ...group],
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
