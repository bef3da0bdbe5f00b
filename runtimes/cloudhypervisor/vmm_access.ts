/**
 * The VMM's access to its instance's files under `bcd helper` (seed 000 §The runtimes, "cloud-hypervisor under bcd
 * helper", Files): the node keeps owning every file and grants the VMM's user POSIX ACL entries on the instance
 * directory and what is in it, inherited by what the VMM creates there (a default entry), for the run; the entries are
 * removed at the stop. The unit's `UMask` is `0007` then, so the inherited entries stay effective.
 *
 * {@link SetfaclAccess} runs `setfacl` (Debian `acl`): `-R -m u:<uid>:rwX,d:u:<uid>:rwX` on the directory, and
 * `-R -x u:<uid>,d:u:<uid>` to take it back; a volume gets one `u:<uid>:r` or `rw` entry and the volume store's
 * directory `u:<uid>:x` (search, no listing), each removed at the stop or the unplug. {@link RecordingAccess} records the calls (tests without `setfacl`).
 *
 * @module
 */
import { VMM_UID_BASE, VMM_UID_COUNT } from "./unit.ts";

/** A tool that failed. */
export class AclToolError extends Error {
  override name = "AclToolError";
}

/** The port. */
export interface VmmFileAccess {
  /** Grants `uid` read-write on `dir` and everything in it, and on what is created there later. */
  grant(dir: string, uid: number): Promise<void>;
  /** Removes those entries again. */
  revoke(dir: string, uid: number): Promise<void>;
  /**
   * Grants `uid` one entry on the single file or directory `path` (a volume: `r` or `rw`; the volume store's
   * directory: `x`, search without listing), for the run.
   */
  grantFile(path: string, uid: number, perms: FilePerms): Promise<void>;
  /** Removes `uid`'s entry on `path` again; a path that is gone has nothing to remove. */
  revokeFile(path: string, uid: number): Promise<void>;
}

/** The permissions of a {@link VmmFileAccess.grantFile} entry. */
export type FilePerms = "r" | "rw" | "x";

function _uid(uid: number): string {
  if (!Number.isSafeInteger(uid) || uid < VMM_UID_BASE || uid >= VMM_UID_BASE + VMM_UID_COUNT) {
    throw new RangeError(`uid ${uid} is not a VMM uid`);
  }
  return String(uid);
}

/** `setfacl`. */
export class SetfaclAccess implements VmmFileAccess {
  async grant(dir: string, uid: number): Promise<void> {
    const u = _uid(uid);
    await _setfacl(["-R", "-m", `u:${u}:rwX,d:u:${u}:rwX`, "--", dir]);
  }
  async revoke(dir: string, uid: number): Promise<void> {
    const u = _uid(uid);
    await _setfacl(["-R", "-x", `u:${u},d:u:${u}`, "--", dir]);
  }
  async grantFile(path: string, uid: number, perms: FilePerms): Promise<void> {
    await _setfacl(["-m", `u:${_uid(uid)}:${_perms(perms)}`, "--", path]);
  }
  async revokeFile(path: string, uid: number): Promise<void> {
    const u = _uid(uid);
    try {
      await Deno.lstat(path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return;
      throw e;
    }
    await _setfacl(["-x", `u:${u}`, "--", path]);
  }
}

function _perms(p: FilePerms): FilePerms {
  if (p !== "r" && p !== "rw" && p !== "x") throw new RangeError(`ACL permissions ${JSON.stringify(p)}`);
  return p;
}

async function _setfacl(args: string[]): Promise<void> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("setfacl", { args, stdin: "null", stdout: "null", stderr: "piped" }).output();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new AclToolError("setfacl is not installed (Debian: acl)", { cause: e });
    }
    throw e;
  }
  if (!out.success) {
    const msg = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-2).join("; ");
    throw new AclToolError(`setfacl ${args[1]}: ${msg || `exit ${out.code}`}`);
  }
}

/** Records grants and revokes (`grant DIR UID`, `revoke DIR UID`). */
export class RecordingAccess implements VmmFileAccess {
  readonly calls: string[] = [];
  grant(dir: string, uid: number): Promise<void> {
    this.calls.push(`grant ${dir} ${_uid(uid)}`);
    return Promise.resolve();
  }
  revoke(dir: string, uid: number): Promise<void> {
    this.calls.push(`revoke ${dir} ${_uid(uid)}`);
    return Promise.resolve();
  }
  grantFile(path: string, uid: number, perms: FilePerms): Promise<void> {
    this.calls.push(`grant-file ${path} ${_uid(uid)} ${_perms(perms)}`);
    return Promise.resolve();
  }
  revokeFile(path: string, uid: number): Promise<void> {
    this.calls.push(`revoke-file ${path} ${_uid(uid)}`);
    return Promise.resolve();
  }
}
