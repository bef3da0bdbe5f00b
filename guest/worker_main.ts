/**
 * `worker TTY SIBLING`: the layered root's worker on the VM's control tty (`worker::work_on_terminal`), with the
 * Linux root, or the fake root when a test asks for it. With TTY `-` the tty is already this process's standard
 * input and output; with a path, the worker runs itself again on that tty (see `terminal.ts`).
 *
 * @module
 */
import { DEFAULT_CHANNEL_KEY_FILE, readChannelKeyFile } from "./channel_key.ts";
import type { Logger } from "../core/log/mod.ts";
import { ConfigInstaller } from "./config_install.ts";
import { FakeRoot } from "./fake_root.ts";
import { LinuxRoot } from "./linux_root.ts";
import { stdioTerminal } from "./terminal.ts";
import { Worker } from "./worker.ts";
import { DEFAULT_EXEC_IDENTITY } from "./process_group.ts";

/** Options of {@link runWorkerOnStdio}. */
export interface WorkerMainOptions {
  readonly log: Logger;
  readonly guestRoot: string;
  /** PID 1's unrelated child, which the processes probe reports. */
  readonly sibling: number;
  /** Run against the fake root reading this kernel command line (tests of the binary). */
  readonly fakeCmdline?: string;
  /** The entries probe's helper (`bcd-guest entries`). */
  readonly entriesHelper?: readonly string[];
}

function diagnostic(text: string): void {
  Deno.stderr.writeSync(new TextEncoder().encode(`bcd-guest: ${text}\n`));
}

/** Whether this process is root: `Deno.uid()` needs `--allow-sys=uid`, which the guest role holds for this. */
function _isRoot(): boolean {
  return Deno.uid() === 0;
}

/** Runs the worker on the tty that is standard input and output; returns its exit status. */
export async function runWorkerOnStdio(opts: WorkerMainOptions): Promise<number> {
  let t;
  try {
    t = stdioTerminal();
  } catch (e) {
    diagnostic(e instanceof Error ? e.message : String(e));
    return 1;
  }
  const ops = opts.fakeCmdline !== undefined
    ? new FakeRoot({ cmdline: opts.fakeCmdline })
    : new LinuxRoot({ log: opts.log, sibling: opts.sibling, entriesHelper: opts.entriesHelper });
  const installer = new ConfigInstaller({ guestRoot: opts.guestRoot, log: opts.log });
  // Seed 004 §(c): the worker runs as root in its VM; its executions never do (nobody/nogroup, no capabilities).
  const execIdentity = _isRoot() ? DEFAULT_EXEC_IDENTITY : undefined;
  // The VM's secret (the launch capability, which is also its channel key), which bcd-vm's launch wrote into the
  // initramfs (absent: any host attaches).
  let channelKey;
  try {
    channelKey = readChannelKeyFile(DEFAULT_CHANNEL_KEY_FILE);
  } catch (e) {
    if (!(e instanceof RangeError || e instanceof Deno.errors.NotCapable)) throw e;
    diagnostic(e.message);
    return 1;
  }
  const worker = new Worker(t, { ops, log: opts.log, installer, execIdentity, channelKey });
  const status = await worker.run();
  if (worker.problem !== null) diagnostic(worker.problem);
  return status;
}
