/**
 * `init TTY layered`: PID 1 of a VM with a layered root (`worker::supervise`, seed 002 §"PID 1 and the worker"),
 * kept minimal: it starts an unrelated child (`idle`), then the worker (`worker - SIBLING` on the tty) in a
 * process of its own, and ends with the worker's status as a shell reports it (128 + N for a signal).
 *
 * What it cannot do in Deno: collect the statuses of processes it adopts. Deno waits only for its own children
 * and the guest role runs without FFI, so orphans that PID 1 adopts stay zombies until the VM ends; the worker
 * kills and collects its own programs, which are the guest's main source of them.
 *
 * @module
 */
import type { Logger } from "../core/log/mod.ts";
import { childStatus, type CommandLine } from "./terminal.ts";
import { runOnTerminal } from "./init.ts";

/** How to run this program again with other arguments (the CLI knows its own flags and entry). */
export type SelfCommand = (args: string[]) => CommandLine;

/** Supervises the idle child and the worker; returns the worker's status. */
export async function superviseLayered(
  tty: string,
  opts: { log: Logger; self: SelfCommand; extraWorkerArgs?: string[] },
): Promise<number> {
  const c = opts.self(["idle"]);
  const idle = new Deno.Command(c.cmd, { args: [...c.args], stdin: "null", stdout: "null", stderr: "inherit" })
    .spawn();
  opts.log.info({ pid: idle.pid }, "started the unrelated child");
  const status = await runOnTerminal(
    tty,
    opts.self(["worker", "-", String(idle.pid), ...(opts.extraWorkerArgs ?? [])]),
    opts.log,
  );
  try {
    idle.kill("SIGKILL");
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
  }
  await childStatus(idle);
  opts.log.info({ status }, "the worker ended");
  return status;
}
