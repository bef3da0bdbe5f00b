/**
 * util-linux `setpriv`'s arguments that drop a process to one uid and gid before it execs its program: no
 * supplementary groups, no inheritable, ambient or bounding capabilities, `no_new_privs`. Used where a root process
 * starts a program as another user (the guest's executions, the helper's driver plugins).
 *
 * @module
 */

/**
 * The options before `--` and the program; the caller checks the ids (e.g. never 0). An id may be a string: a shell
 * expansion such as `"$uid"` in a maintainer script (`roles/deb.ts`).
 */
export function setprivDrop(uid: number | string, gid: number | string): string[] {
  return [
    `--reuid=${uid}`,
    `--regid=${gid}`,
    "--clear-groups",
    "--inh-caps=-all",
    "--ambient-caps=-all",
    "--bounding-set=-all",
    "--no-new-privs",
  ];
}
