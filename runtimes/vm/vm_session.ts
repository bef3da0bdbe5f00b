/**
 * Reaching a launched VM: its control socket (which the VMM creates once it runs), its end (polled through its
 * verified process identity: the VM is no child of a reattaching process, so nothing can wait for it), and its
 * outcome report: the last `bcd-guest: exit status N` line that the guest's PID 1 wrote to the console, which the
 * VMM's log keeps.
 *
 * @module
 */
import { isAlive, type ProcessIdentity } from "./process_identity.ts";

/** The VM's control socket, once the VMM created it; fails once the VMM ended or after `timeoutMs`. */
export async function connectControl(path: string, vmm: ProcessIdentity, timeoutMs: number): Promise<Deno.UnixConn> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await Deno.connect({ transport: "unix", path });
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound || e instanceof Deno.errors.ConnectionRefused)) throw e;
      if (!(await isAlive(vmm))) throw new Error(`the VMM (pid ${vmm.pid}) ended before its control socket opened`);
      if (Date.now() > until) throw new Error(`no control socket at ${path} within ${timeoutMs} ms`, { cause: e });
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Whether the VMM ended within `timeoutMs`. */
export async function waitExit(vmm: ProcessIdentity, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (await isAlive(vmm)) {
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/** The VM's outcome: `success 0`, `guest-exit N`, or `unknown` without a report. */
export interface Outcome {
  readonly status: number | null;
  readonly text: string;
}

/** Reads the outcome report from the VMM's log. */
export async function readOutcome(logPath: string): Promise<Outcome> {
  let text: string;
  try {
    text = await Deno.readTextFile(logPath);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return { status: null, text: "unknown" };
    throw e;
  }
  const all = [...text.matchAll(/bcd-guest: exit status (\d+)/g)];
  const last = all.at(-1);
  if (last === undefined) return { status: null, text: "unknown" };
  const status = Number(last[1]);
  return { status, text: status === 0 ? "success 0" : `guest-exit ${status}` };
}
