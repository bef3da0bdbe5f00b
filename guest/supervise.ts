/**
 * `init TTY layered`: PID 1 of a VM with a layered root (`worker::supervise`, seed 002 §"PID 1 and the worker"),
 * kept minimal: it starts an unrelated child (`idle`), then the worker (`worker - SIBLING` on the tty) in a
 * process of its own, and ends with the worker's status as a shell reports it (128 + N for a signal).
 *
 * It also collects the statuses of the processes it adopts ({@link OrphanReaper}: each zombie child that it did not
 * spawn, by its ID, through libc's `waitpid` over FFI), which Deno's own waits never take.
 *
 * @module
 */
import type { Logger } from "../core/log/mod.ts";
import { libcWaitPid, OrphanReaper, type WaitPid } from "./reaper.ts";
import { childStatus, type CommandLine, spawnOnTerminal } from "./terminal.ts";

/** How to run this program again with other arguments (the CLI knows its own flags and entry). */
export type SelfCommand = (args: string[]) => CommandLine;

/** Supervises the idle child and the worker; returns the worker's status. */
export async function superviseLayered(
  tty: string,
  opts: { log: Logger; self: SelfCommand; extraWorkerArgs?: string[]; waitpid?: WaitPid | null },
): Promise<number> {
  const own = new Set<number>();
  const waitpid = opts.waitpid === undefined ? libcWaitPid() : opts.waitpid;
  const reaper = waitpid === null
    ? null
    : new OrphanReaper({ parent: Deno.pid, own: () => own, waitpid, log: opts.log });
  if (reaper === null) opts.log.warn("no FFI: processes that PID 1 adopts stay zombies until the VM ends");
  reaper?.start();
  const c = opts.self(["idle"]);
  const idle = new Deno.Command(c.cmd, { args: [...c.args], stdin: "null", stdout: "null", stderr: "inherit" })
    .spawn();
  own.add(idle.pid);
  opts.log.info({ pid: idle.pid }, "started the unrelated child");
  const worker = spawnOnTerminal(
    tty,
    opts.self(["worker", "-", String(idle.pid), ...(opts.extraWorkerArgs ?? [])]),
  );
  own.add(worker.pid);
  opts.log.info({ pid: worker.pid, tty }, "serving the control tty");
  const status = await childStatus(worker);
  try {
    idle.kill("SIGKILL");
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
  }
  await childStatus(idle);
  await reaper?.stop();
  opts.log.info({ status, orphans_collected: reaper?.reaped ?? 0 }, "the worker ended");
  return status;
}
