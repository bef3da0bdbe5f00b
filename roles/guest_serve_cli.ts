/**
 * The guest role's control subcommands (seed 002 §Guest agent): `serve` on stdin/stdout, `init TTY` on the VM's
 * control tty (as PID 1 it powers the VM off with its status), `init TTY layered` (PID 1 of a layered root, which
 * supervises `idle` and `worker`), `worker TTY SIBLING`, and `idle`.
 *
 * @module
 */
import { channelKeyFromFile } from "./guest_channel_key.ts";
import { EXIT_INTERNAL, EXIT_OK, type Subcommand, UsageError } from "./_cli.ts";
import { createLogger, levelFromEnv, type Logger } from "../core/log/mod.ts";
import { serve } from "../guest/serve.ts";
import { powerOff, runOnTerminal } from "../guest/init.ts";
import { stdioTerminal } from "../guest/terminal.ts";
import { fileTransport } from "../guest/transport.ts";
import { ConfigInstaller, DEFAULT_GUEST_ROOT } from "../guest/config_install.ts";
import type { ServeEnd } from "../guest/diagnostics.ts";
import { superviseLayered } from "../guest/supervise.ts";
import { runWorkerOnStdio } from "../guest/worker_main.ts";
import { escapeValue, runEntries } from "../guest/entries.ts";
import { roleFlags } from "./permissions.ts";

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
/** `--fake-root CMDLINE`: tests of the binary run the worker against the fake root, reading CMDLINE. */
const WORKER_OPTIONS = { ...GUEST_ROOT_OPTION, "fake-root": { type: "string" } } as const;

function workerFlags(values: Record<string, unknown>): string[] {
  const out: string[] = [];
  if (typeof values["guest-root"] === "string") out.push("--guest-root", values["guest-root"]);
  if (typeof values["fake-root"] === "string") out.push("--fake-root", values["fake-root"]);
  return out;
}

function serveFlags(values: Record<string, unknown>): string[] {
  return typeof values["guest-root"] === "string" ? ["--guest-root", values["guest-root"]] : [];
}

/**
 * Set by a VM's initramfs launcher (`runtimes/vm/guest_initramfs.ts`) for PID 1 of a layered root, which runs with
 * `--allow-all`: its worker mounts the root and writes cgroupfs, which Deno grants only to `--allow-all`, so the
 * children it starts run with the same flags.
 */
export const ALLOW_ALL_VAR = "BCD_GUEST_ALLOW_ALL";

function _allowAll(): boolean {
  try {
    return Deno.env.get(ALLOW_ALL_VAR) === "1";
  } catch (e) {
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) return false;
    throw e;
  }
}

/**
 * How to run this program again: the compiled binary itself, or `deno run` of its main module (the source entry,
 * or the bundle a VM carries) with the guest role's flags, or `--allow-all` where {@link ALLOW_ALL_VAR} says so.
 */
function selfCommand(args: string[]): { cmd: string; args: string[] } {
  const exe = Deno.execPath();
  if (!/(^|\/)deno$/.test(exe)) return { cmd: exe, args };
  const main = Deno.mainModule.startsWith("file:") ? new URL(Deno.mainModule).pathname : null;
  const entry = main !== null && /(^|\/)guest\.(ts|js)$/.test(main)
    ? main
    : new URL("./guest.ts", import.meta.url).pathname;
  const flags = _allowAll() ? ["--quiet", "--no-prompt", "--allow-all"] : roleFlags("guest");
  return { cmd: exe, args: ["run", ...flags, entry, ...args] };
}

/** `serve`: the guest agent on standard input and output. */
const serveCmd: Subcommand = {
  summary:
    "serve the control framing on stdin/stdout (--tty: a tty in raw mode; --port: a virtio-serial port, whose end of " +
    "file is the host going away, a reset); exit 0 once stopped or closed",
  options: {
    ...GUEST_ROOT_OPTION,
    tty: { type: "boolean" },
    port: { type: "boolean" },
    "channel-key-file": { type: "string" },
  },
  run: async ({ values }) => {
    const log = logger("serve");
    const keyFlag = values["channel-key-file"];
    const channelKey = channelKeyFromFile(typeof keyFlag === "string" ? keyFlag : undefined, "serve");
    const installer = new ConfigInstaller({ guestRoot: guestRoot(values), log });
    let t;
    try {
      t = values.tty === true ? stdioTerminal({ blocking: true }) : fileTransport(
        Deno.stdin,
        Deno.stdout,
        // serve answers one message at a time and runs nothing else meanwhile: blocking stdio costs no handoffs.
        values.port === true ? { resetOnEof: true, retryMs: 200, blocking: true } : { blocking: true },
      );
    } catch (e) {
      return diagnose({ ok: false, problem: e instanceof Error ? e.message : String(e) });
    }
    // The VM's one secret (the launch capability bcd-vm wrote into the initramfs, or the channel key the host put on
    // the seed ISO) gates each epoch; without one, any host attaches.
    return diagnose(await serve(t, { log, installer, channelKey }));
  },
};

/** `init TTY`: the guest agent on the VM's control tty, as PID 1. */
const initCmd: Subcommand = {
  summary: "serve the control tty TTY in raw mode (layered: supervise the worker); as PID 1, power off with the status",
  options: WORKER_OPTIONS,
  positionals: true,
  run: async ({ values, positionals }) => {
    const [tty, mode, ...rest] = positionals;
    if (tty === undefined || rest.length > 0 || (mode !== undefined && mode !== "layered")) {
      throw new UsageError("usage: init TTY [layered]");
    }
    const log = logger("init");
    const status = mode === "layered"
      ? await superviseLayered(tty, { log, self: selfCommand, extraWorkerArgs: workerFlags(values) })
      : await runOnTerminal(tty, selfCommand(["serve", "--tty", ...serveFlags(values)]), log);
    if (Deno.pid === 1) await powerOff(status, log);
    return status;
  },
};

/** `worker TTY SIBLING`: the layered root's worker. */
const workerCmd: Subcommand = {
  summary: "run the layered root's worker on the control tty TTY (SIBLING: PID 1's unrelated child)",
  options: WORKER_OPTIONS,
  positionals: true,
  run: async ({ values, positionals }) => {
    const [tty, sibling, ...rest] = positionals;
    if (tty === undefined || sibling === undefined || rest.length > 0 || !/^[1-9][0-9]*$/.test(sibling)) {
      throw new UsageError("usage: worker TTY SIBLING");
    }
    const log = logger("worker");
    if (tty !== "-") {
      return await runOnTerminal(tty, selfCommand(["worker", "-", sibling, ...workerFlags(values)]), log);
    }
    return await runWorkerOnStdio({
      log,
      guestRoot: guestRoot(values),
      sibling: Number(sibling),
      fakeCmdline: typeof values["fake-root"] === "string" ? values["fake-root"] : undefined,
      entriesHelper: (({ cmd, args }) => [cmd, ...args])(selfCommand(["entries"])),
    });
  },
};

/** `entries ROOT CGROUP`: the entries probe's helper, which the worker runs in a mount namespace of its own. */
const entriesCmd: Subcommand = {
  summary: "launch the entries probe's cases into the root ROOT, each in the cgroup CGROUP; print their facts",
  positionals: true,
  run: async ({ positionals }) => {
    const [root, cgroup, ...rest] = positionals;
    if (root === undefined || cgroup === undefined || rest.length > 0 || !root.startsWith("/")) {
      throw new UsageError("usage: entries ROOT CGROUP");
    }
    const facts = await runEntries({ root, cgroup });
    const text = facts.map(([k, v]) => `${k}=${escapeValue(v)}\n`).join("");
    await Deno.stdout.write(new TextEncoder().encode(text));
    return 0;
  },
};

/** `idle`: sleeps until a signal ends it (PID 1's unrelated child); says so (info) once it is waiting. */
const idleCmd: Subcommand = {
  summary: "sleep until a signal ends it",
  run: async () => {
    logger("idle").info("idle until a signal ends it");
    for (;;) await new Promise((r) => setTimeout(r, 3_600_000));
  },
};

/** The guest role's control subcommands, for `roles/guest.ts`. */
export const GUEST_CONTROL_COMMANDS: Record<string, Subcommand> = {
  serve: serveCmd,
  init: initCmd,
  worker: workerCmd,
  idle: idleCmd,
  entries: entriesCmd,
};
