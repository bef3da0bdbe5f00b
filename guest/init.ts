/**
 * `init TTY`: serve the VM's control tty in place of the managed agent (seed 002 §Guest agent). The serving
 * process runs with the tty as its standard input and output (see `terminal.ts`); `init` waits for the tty,
 * runs it, and ends with its status. As PID 1, which must not exit, it ends the VM with that status instead:
 * through `/sbin/bcd-exit STATUS` when the initramfs has one (the seed's `/sbin/nvx-exit`), else by logging the
 * status to the kernel log and powering off with sysrq.
 *
 * @module
 */
import type { Logger } from "../core/log/mod.ts";
import { childStatus, type CommandLine, spawnOnTerminal } from "./terminal.ts";

/** The program that ends the VM with a status, when present. */
export const EXIT_PROGRAM = "/sbin/bcd-exit";

/** Runs `command` on the tty once it appeared (up to 30 s); returns its status (1 when the tty never came). */
export async function runOnTerminal(path: string, command: CommandLine, log: Logger, waitMs?: number): Promise<number> {
  const child = spawnOnTerminal(path, command, waitMs);
  log.info({ pid: child.pid, tty: path }, "serving the control tty");
  return await childStatus(child);
}

/** Ends the VM with `status` (PID 1 never exits). */
export async function powerOff(status: number, log: Logger): Promise<never> {
  log.info({ status }, "ending the VM");
  try {
    const st = await Deno.stat(EXIT_PROGRAM);
    if (st.isFile) await new Deno.Command(EXIT_PROGRAM, { args: [String(status)] }).output();
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) log.error({ err: String(e) }, `${EXIT_PROGRAM} failed`);
  }
  try {
    await Deno.writeTextFile("/dev/kmsg", `bcd-guest: exit status ${status}\n`);
  } catch (e) {
    log.warn({ err: String(e) }, "cannot write /dev/kmsg");
  }
  try {
    await Deno.writeTextFile("/proc/sysrq-trigger", "o");
  } catch (e) {
    log.error({ err: String(e) }, "cannot power off through sysrq");
  }
  for (;;) await new Promise((r) => setTimeout(r, 3_600_000));
}
