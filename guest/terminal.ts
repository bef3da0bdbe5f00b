/**
 * The VM's control tty (seed 002 §Guest agent, `nvx::guest::terminal`): wait up to 30 seconds while the kernel
 * sets the tty up, refuse a path that is no tty, and put it in raw mode so it passes the session's bytes as
 * they are.
 *
 * Deno refuses to open a device under /dev without `--allow-all` (denoland/deno#27980), which the guest role
 * does not hold. So the tty is never opened by Deno: the agent runs its serving process through `sh`, whose
 * redirections make the tty that process's standard input and output, and the process puts its standard input
 * in raw mode (`Deno.stdin.setRaw`, which needs no permission).
 *
 * @module
 */
import { fileTransport, type Transport } from "./transport.ts";

/** How long the agent waits for the tty to appear. */
export const TERMINAL_WAIT_MS = 30_000;

/** A path or a standard input that is not a tty. */
export class NotATerminal extends Error {
  override name = "NotATerminal";
}

/** A command line: the program and its arguments. */
export interface CommandLine {
  readonly cmd: string;
  readonly args: readonly string[];
}

/**
 * The shell that waits for the tty (every 100 ms, up to `tries` times), refuses a path that is no character
 * device, and runs the command with the tty as its standard input and output. Even `Deno.stat` of a device
 * under /dev needs `--allow-all`, so the wait is the shell's too.
 */
const ON_TERMINAL = 'tty="$1"; tries="$2"; shift 2; i=0; ' +
  'while [ ! -e "$tty" ] && [ "$i" -lt "$tries" ]; do sleep 0.1; i=$((i+1)); done; ' +
  '[ -e "$tty" ] || { echo "bcd-guest: $tty did not appear" >&2; exit 1; }; ' +
  '[ -c "$tty" ] || { echo "bcd-guest: $tty is not a tty" >&2; exit 1; }; ' +
  'exec "$@" <"$tty" >"$tty"';

/** Spawns `command` with the tty at `path` as its standard input and output, once the tty appeared. */
export function spawnOnTerminal(path: string, command: CommandLine, waitMs = TERMINAL_WAIT_MS): Deno.ChildProcess {
  const tries = String(Math.ceil(waitMs / 100));
  return new Deno.Command("sh", {
    args: ["-c", ON_TERMINAL, "sh", path, tries, command.cmd, ...command.args],
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).spawn();
}

/**
 * The control session on this process's standard input and output, which must be a tty: raw mode, and the end
 * of the tty's host side as a reset (see `core/framing/mod.ts`).
 */
export function stdioTerminal(): Transport {
  if (!Deno.stdin.isTerminal()) throw new NotATerminal("standard input is not a tty");
  Deno.stdin.setRaw(true);
  return fileTransport(Deno.stdin, Deno.stdout, { resetOnEof: true });
}

/** The status of a child as a shell reports it (128 + N for a signal, real-time ones included). */
export async function childStatus(child: Deno.ChildProcess): Promise<number> {
  try {
    const st = await child.status;
    return st.signal !== null && st.code <= 128 ? 128 + 9 : st.code;
  } catch (e) {
    // Deno rejects the status of a child that a real-time signal ended ("Invalid signal: N").
    const m = /Invalid signal: (\d+)/.exec(e instanceof Error ? e.message : String(e));
    if (!m) throw e;
    return 128 + Number(m[1]);
  }
}
