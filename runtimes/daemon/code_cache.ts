/**
 * The agents' V8 code cache (issue 24). Deno keeps the compiled code of the modules it ran in `DENO_DIR`
 * (`v8_code_cache_v2`), keyed by the module's URL and source: an agent started with a warm cache compiles nothing
 * (measured on the shipped sim: 236 ms CPU and 91 MiB cold, 86 ms and 56.5 MiB warm). The units give each agent an
 * explicit, writable `DENO_DIR` ({@link AGENT_DENO_DIR}; the helper's {@link HELPER_DENO_DIR}), and wherever a host gets
 * a new build the cache is filled before the agent's next start by a no-op start of that build through the same path
 * the unit runs (`/opt/bcd/current/bcd-<role> warm-cache`, which loads and compiles everything a start loads before
 * its `Hello`, and lets Deno write the cache), as the agent's user: in the package's `postinst` (`roles/deb.ts`), and in the helper after a self-update's
 * swap, before it restarts the agent ({@link warmCodeCache}, `HelperUpgrader`'s `warm`). A warm-up that fails costs
 * only that: the next start compiles, as without it.
 *
 * @module
 */
import { setprivDrop } from "../../core/setpriv.ts";
import { join } from "../../core/util/path.ts";
import { CURRENT_LINK } from "./release_store.ts";

/** The agents' user under the packaged units (`roles/deb.ts`). */
export const AGENT_USER = "bcd";

/** The agent units' `DENO_DIR` (systemd's `CacheDirectory=bcd`, owned by the agent's user). */
export const AGENT_DENO_DIR = "/var/cache/bcd/deno";
/** The helper unit's `DENO_DIR` (`CacheDirectory=bcd-helper`, root's). */
export const HELPER_DENO_DIR = "/var/cache/bcd-helper/deno";

/** Whose cache to fill with which build. */
export interface WarmTarget {
  /** The releases root: `<releasesDir>/current/bcd-<role>` is what the unit runs. */
  readonly releasesDir: string;
  readonly role: string;
  /** The agent's user and group (never root: the cache must stay writable for the agent). */
  readonly uid: number;
  readonly gid: number;
  /** The agent unit's `DENO_DIR`. */
  readonly denoDir: string;
}

/**
 * The user an agent's launcher gives `denoDir` to when no unit names a `DENO_DIR` (a supervised agent): the owner of
 * its parent directory (`/var/cache/bcd`; `roles/build.ts` AGENT_CACHE_DIR), or `null` where that is absent, not a
 * directory, or root's (the cache is never warmed as root).
 */
export async function cacheDirOwner(denoDir: string): Promise<{ uid: number; gid: number } | null> {
  let st: Deno.FileInfo;
  try {
    st = await Deno.lstat(denoDir.slice(0, denoDir.lastIndexOf("/")));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  if (!st.isDirectory || st.uid === null || st.gid === null || st.uid === 0 || st.gid === 0) return null;
  return { uid: st.uid, gid: st.gid };
}

/** The command {@link warmCodeCache} runs: the build's launcher `warm-cache`, dropped to the agent's ids, clean env. */
export function warmCommand(t: WarmTarget): { cmd: string; args: string[]; env: Record<string, string> } {
  if (t.uid === 0 || t.gid === 0) throw new RangeError("the code cache is warmed as the agent's user, never root");
  return {
    cmd: "setpriv",
    args: [...setprivDrop(t.uid, t.gid), "--", join(t.releasesDir, CURRENT_LINK, `bcd-${t.role}`), "warm-cache"],
    env: { PATH: "/usr/bin:/bin", DENO_DIR: t.denoDir, DENO_NO_UPDATE_CHECK: "1", HOME: t.denoDir },
  };
}

/** Runs {@link warmCommand}; throws an Error with its exit status and last stderr line when it fails. */
export async function warmCodeCache(t: WarmTarget): Promise<void> {
  const c = warmCommand(t);
  const out = await new Deno.Command(c.cmd, {
    args: c.args,
    env: c.env,
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const said = new TextDecoder().decode(out.stderr).trim().split("\n").at(-1) ?? "";
    throw new Error(`warming the code cache of bcd-${t.role} failed (exit ${out.code}): ${said.slice(0, 300)}`);
  }
}
