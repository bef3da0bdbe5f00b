/**
 * Restarting the agent after a swap or a rollback: `systemctl restart bcd-<role>.service` where systemd runs the host,
 * else SIGTERM to the process the supervisor (`bcd-helper supervise`) runs, whose pid it keeps in
 * `<releases dir>/agent.pid`; the supervisor then starts `current/bcd-<role>` again.
 *
 * @module
 */
import { join } from "node:path";

/** The supervisor's pid file under the releases dir. */
export const AGENT_PID_FILE = "agent.pid";

/** SIGTERM to the pid in `<releasesDir>/agent.pid`; a missing or stale file is not an error (nothing runs). */
export async function signalSupervisedAgent(releasesDir: string): Promise<void> {
  let text: string;
  try {
    text = await Deno.readTextFile(join(releasesDir, AGENT_PID_FILE));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  const pid = Number(text.trim());
  if (!Number.isSafeInteger(pid) || pid <= 1) throw new RangeError(`${AGENT_PID_FILE} holds ${JSON.stringify(text)}`);
  try {
    Deno.kill(pid, "SIGTERM");
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e; // it ended already: the supervisor starts current anyway
  }
}

/** `systemctl restart --no-block bcd-<role>.service`. */
export async function systemdRestart(role: string): Promise<void> {
  const out = await new Deno.Command("systemctl", {
    args: ["restart", "--no-block", `bcd-${role}.service`],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(`systemctl restart bcd-${role}: ${new TextDecoder().decode(out.stderr).trim()}`);
}
