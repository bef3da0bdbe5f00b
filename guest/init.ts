/**
 * `init TTY`: serve the VM's control tty in place of the managed agent (seed 002 §Guest agent). As PID 1, which
 * must not exit, it ends the VM with its status instead: through `/sbin/bcd-exit STATUS` when the initramfs has
 * one (the seed's `/sbin/nvx-exit`), else by logging the status to the kernel log and powering off with sysrq.
 *
 * @module
 */
import type { Logger } from "../core/log/mod.ts";
import { openTerminal } from "./terminal.ts";
import { fileTransport } from "./transport.ts";
import { serve } from "./serve.ts";
import type { ConfigInstaller } from "./config_install.ts";
import type { ServeEnd } from "./diagnostics.ts";

/** The program that ends the VM with a status, when present. */
export const EXIT_PROGRAM = "/sbin/bcd-exit";

/** Serves the tty at `path`; the end of the tty's host side is a reset (see `core/framing/mod.ts`). */
export async function serveTerminal(
  path: string,
  opts: { log: Logger; installer?: ConfigInstaller },
): Promise<ServeEnd> {
  let tty: Deno.FsFile;
  try {
    tty = await openTerminal(path);
  } catch (e) {
    return { ok: false, problem: `cannot serve ${path}: ${e instanceof Error ? e.message : String(e)}` };
  }
  const t = fileTransport(tty, tty, { resetOnEof: true });
  try {
    return await serve(t, opts);
  } finally {
    tty.close();
  }
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
