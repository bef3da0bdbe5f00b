/**
 * Opening the VM's control tty as `nvx::guest::terminal` does (seed 002 §Guest agent): wait up to 30 seconds
 * while the kernel sets the tty up, refuse a path that is no tty, and put it in raw mode so it passes the
 * session's bytes as they are.
 *
 * @module
 */

/** How long {@link openTerminal} waits for the tty to appear. */
export const TERMINAL_WAIT_MS = 30_000;

/** A path that is not a tty. */
export class NotATerminal extends Error {
  override name = "NotATerminal";
}

/** Options of {@link openTerminal}. */
export interface OpenTerminalOptions {
  readonly waitMs?: number;
  readonly pollMs?: number;
  readonly now?: () => number;
  readonly sleep?: (ms: number) => Promise<void>;
}

/** Opens `path` read-write in raw mode, waiting up to 30 s for it to appear; refuses a path that is no tty. */
export async function openTerminal(path: string, opts: OpenTerminalOptions = {}): Promise<Deno.FsFile> {
  const now = opts.now ?? Date.now;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = now() + (opts.waitMs ?? TERMINAL_WAIT_MS);
  for (;;) {
    try {
      const f = await Deno.open(path, { read: true, write: true });
      if (!f.isTerminal()) {
        f.close();
        throw new NotATerminal(`${path} is not a tty`);
      }
      f.setRaw(true);
      return f;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound) || now() >= deadline) throw e;
      await sleep(opts.pollMs ?? 100);
    }
  }
}
