/**
 * The VM's control channel (seed 002 §Guest agent, `nvx::guest::terminal`): wait up to 30 seconds while the kernel
 * sets the device up, refuse a path that is no character device, and serve it. A tty (hvc, ttyS, pts) is put in raw
 * mode so it passes the session's bytes as they are; a virtio-serial port (`/dev/vportNpM`, which `bcd-vm` launches
 * use: a virtio console loses bytes when the host reads slowly, see `runtimes/vm/vmm.ts`) has no line discipline to
 * set, and reads 0 bytes while the host side is away, as a tty's hangup does.
 *
 * Deno refuses to open a device under /dev without `--allow-all` (denoland/deno#27980), which the guest role
 * does not hold. So the device is never opened by Deno: the agent runs its serving process through `sh`, whose
 * redirection opens it once, read-write (a virtio-serial port admits one opener), as that process's standard input
 * and output, and the process puts its standard input in raw mode when it is a tty (`Deno.stdin.setRaw`, which needs
 * no permission).
 *
 * @module
 */
import { fileTransport, type Transport } from "./transport.ts";

/** How long the agent waits for the tty to appear. */
export const TERMINAL_WAIT_MS = 30_000;

/** A path or a standard input that is neither a tty nor a virtio-serial port. */
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
  'exec "$@" <>"$tty" >&0';

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

/** Where a virtio-serial port's device lies (`vport<device>p<port>`). */
const VIRTIO_PORT = /^\/dev\/vport\d+p\d+$/;

/**
 * The control session on this process's standard input and output, which must be a tty (put in raw mode) or a
 * virtio-serial port: the end of the host side, as a reset (see `core/framing/mod.ts`). `blocking`: see
 * `FileTransportOptions.blocking` in transport.ts (only for a process that serves one message at a time and runs nothing else).
 */
export function stdioTerminal(opts: { readonly blocking?: boolean } = {}): Transport {
  if (Deno.stdin.isTerminal()) {
    Deno.stdin.setRaw(true);
  } else {
    const device = _stdinDevice();
    if (device === null || !VIRTIO_PORT.test(device)) {
      throw new NotATerminal(`standard input is not a tty or a virtio-serial port (it is ${device ?? "unnamed"})`);
    }
  }
  return fileTransport(Deno.stdin, Deno.stdout, { resetOnEof: true, blocking: opts.blocking === true });
}

/** The path that standard input was opened at, or null when it names none that can be read. */
function _stdinDevice(): string | null {
  try {
    return Deno.readLinkSync("/proc/self/fd/0");
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotCapable) return null;
    throw e;
  }
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
