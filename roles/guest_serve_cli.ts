/**
 * The guest role's control subcommands (seed 002 §Guest agent): `serve` on stdin/stdout, `init TTY` on the VM's
 * control tty (as PID 1 it powers the VM off with its status), `init TTY layered` (PID 1 of a layered root, which
 * supervises `idle` and `worker`), `worker TTY SIBLING`, and `idle`.
 *
 * @module
 */
import { EXIT_INTERNAL, EXIT_OK, type Subcommand, UsageError } from "./_cli.ts";
import { createLogger, levelFromEnv, type Logger } from "../core/log/mod.ts";
import { serve } from "../guest/serve.ts";
import { powerOff, serveTerminal } from "../guest/init.ts";
import { fileTransport } from "../guest/transport.ts";
import { ConfigInstaller, DEFAULT_GUEST_ROOT } from "../guest/config_install.ts";
import type { ServeEnd } from "../guest/diagnostics.ts";

function guestRoot(values: Record<string, unknown>): string {
  if (typeof values["guest-root"] === "string") return values["guest-root"];
  try {
    return Deno.env.get("BCD_GUEST_ROOT") ?? DEFAULT_GUEST_ROOT;
  } catch (e) {
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) return DEFAULT_GUEST_ROOT;
    throw e;
  }
}

function logger(cmd: string): Logger {
  return createLogger({ level: levelFromEnv("info"), base: { role: "guest", cmd } });
}

function diagnose(end: ServeEnd): number {
  if (end.ok) return EXIT_OK;
  Deno.stderr.writeSync(new TextEncoder().encode(`bcd-guest: ${end.problem}\n`));
  return EXIT_INTERNAL;
}

const GUEST_ROOT_OPTION = { "guest-root": { type: "string" } } as const;

/** `serve`: the guest agent on standard input and output. */
const serveCmd: Subcommand = {
  summary: "serve the control framing on stdin/stdout (exit 0 once stopped or closed, 1 on failure)",
  options: GUEST_ROOT_OPTION,
  run: async ({ values }) => {
    const log = logger("serve");
    const installer = new ConfigInstaller({ guestRoot: guestRoot(values), log });
    const end = await serve(fileTransport(Deno.stdin, Deno.stdout), { log, installer });
    return diagnose(end);
  },
};

/** `init TTY`: the guest agent on the VM's control tty, as PID 1. */
const initCmd: Subcommand = {
  summary: "serve the control tty TTY in raw mode; as PID 1, power the VM off with the status",
  options: GUEST_ROOT_OPTION,
  positionals: true,
  run: async ({ values, positionals }) => {
    const [tty, mode, ...rest] = positionals;
    if (tty === undefined || rest.length > 0 || (mode !== undefined && mode !== "layered")) {
      throw new UsageError("usage: init TTY [layered]");
    }
    const log = logger("init");
    const installer = new ConfigInstaller({ guestRoot: guestRoot(values), log });
    if (mode === "layered") throw new UsageError("init TTY layered: not in this build yet");
    const status = diagnose(await serveTerminal(tty, { log, installer }));
    if (Deno.pid === 1) await powerOff(status, log);
    return status;
  },
};

/** `idle`: sleeps until a signal ends it (PID 1's unrelated child). */
const idleCmd: Subcommand = {
  summary: "sleep until a signal ends it",
  run: async () => {
    for (;;) await new Promise((r) => setTimeout(r, 3_600_000));
  },
};

/** The guest role's control subcommands, for `roles/guest.ts`. */
export const GUEST_CONTROL_COMMANDS: Record<string, Subcommand> = {
  serve: serveCmd,
  init: initCmd,
  idle: idleCmd,
};
