/**
 * The supervisor where no systemd runs (`bcd-helper supervise`): it runs `<releases dir>/current/bcd-<role> ARGS`,
 * keeps the child's pid in `<releases dir>/agent.pid` (the helper's restart signals it), and starts `current` again
 * whenever the child ends, so a swap or a rollback of `current` takes effect on the next start. It stops (and stops
 * its child) when `signal` aborts.
 *
 * @module
 */
import { join } from "node:path";
import type { Logger } from "../../core/log/mod.ts";
import { CURRENT_LINK } from "./release_store.ts";
import { AGENT_PID_FILE } from "./restart.ts";

/** Options of {@link supervise}. */
export interface SuperviseOptions {
  readonly releasesDir: string;
  readonly role: string;
  readonly args: readonly string[];
  readonly log: Logger;
  readonly signal: AbortSignal;
  /** Runs the agent as this user (`setpriv --reuid --regid --init-groups`); as the supervisor's own otherwise. */
  readonly user?: string;
  /** The pause before a restart (default 1 s): a child that exits at once does not spin. */
  readonly restartDelayMs?: number;
}

function _delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

async function _current(dir: string): Promise<string | null> {
  try {
    return await Deno.readLink(join(dir, CURRENT_LINK));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

/** Runs the agent until `signal` aborts. */
export async function supervise(o: SuperviseOptions): Promise<void> {
  const exe = join(o.releasesDir, CURRENT_LINK, `bcd-${o.role}`);
  const pidFile = join(o.releasesDir, AGENT_PID_FILE);
  while (!o.signal.aborted) {
    let child: Deno.ChildProcess;
    try {
      const [cmd, args] = o.user === undefined
        ? [exe, [...o.args]]
        : ["setpriv", [`--reuid=${o.user}`, `--regid=${o.user}`, "--init-groups", "--", exe, ...o.args]];
      child = new Deno.Command(cmd, { args, stdin: "null", stdout: "inherit", stderr: "inherit" }).spawn();
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound || e instanceof Deno.errors.PermissionDenied)) throw e;
      o.log.error({ exe, err: e.message }, "supervise: cannot start the agent");
      await _delay(o.restartDelayMs ?? 1000, o.signal);
      continue;
    }
    await Deno.writeTextFile(pidFile, `${child.pid}\n`);
    o.log.info({ pid: child.pid, release: await _current(o.releasesDir) }, "supervise: agent started");
    const stop = () => {
      try {
        child.kill("SIGTERM");
      } catch (e) {
        if (!(e instanceof TypeError)) throw e; // it exited already
      }
    };
    o.signal.addEventListener("abort", stop, { once: true });
    const status = await child.status;
    o.signal.removeEventListener("abort", stop);
    o.log.info({ pid: child.pid, code: status.code, signal: status.signal }, "supervise: agent ended");
    if (o.signal.aborted) break;
    await _delay(o.restartDelayMs ?? 1000, o.signal);
  }
  await Deno.remove(pidFile).catch((e) => {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  });
}
