/**
 * PID 1's collection of adopted orphans (seed 002 §"PID 1 and the worker", step 3: "It collects the status of every
 * child, adopted processes included"). Deno waits only for the children it spawned, each by its own ID, and has no
 * `waitpid(-1)`, so a process that the kernel reparents to PID 1 (a program's descendant whose parent ended) would
 * stay a zombie until the VM ends.
 *
 * The reaper never takes a status that Deno waits for: on each SIGCHLD (and on a slow backstop interval, since
 * signals coalesce), it lists PID 1's children that `/proc` shows as zombies, skips the ones PID 1 spawned itself
 * (the idle child and the worker, whose statuses Deno's own wait takes), and collects each other one by its ID with
 * `waitpid(pid, WNOHANG)` from libc through FFI — the seed's "another's by the ID that the wait gives". Only a zombie
 * is waited for, so no wait blocks and no live child's report is taken.
 *
 * Why FFI rather than a reaper program of its own: PID 1 of a layered VM already runs with `--allow-all` (it mounts
 * the root and writes cgroupfs, see `runtimes/vm/guest_initramfs.ts`), so `Deno.dlopen` of the glibc that the
 * guest's Deno itself loads adds no grant; a separate reaper could not collect PID 1's children, since only a
 * process's parent can wait for it. Without FFI (the scoped guest role) {@link libcWaitPid} returns null and
 * PID 1 logs that it cannot collect adopted processes.
 *
 * @module
 */
import type { Logger } from "../core/log/mod.ts";

/** Collects the zombie child `pid` without blocking: its status, or null when it was not collectable. */
export type WaitPid = (pid: number) => number | null;

/** A process as `/proc/PID/stat` shows it. */
export interface ProcStat {
  readonly pid: number;
  readonly state: string;
  readonly ppid: number;
}

/** Parses `/proc/PID/stat` (the command, in parentheses, may hold spaces and parentheses). */
export function parseProcStat(text: string): ProcStat | null {
  const close = text.lastIndexOf(")");
  const pid = Number.parseInt(text, 10);
  if (close < 0 || !Number.isInteger(pid)) return null;
  const [state, ppid] = text.slice(close + 2).split(" ");
  if (state === undefined || ppid === undefined || !/^\d+$/.test(ppid)) return null;
  return { pid, state, ppid: Number(ppid) };
}

/** Every process of `/proc` (a process that ends while it is read is left out). */
export async function listProcesses(proc = "/proc"): Promise<ProcStat[]> {
  const out: ProcStat[] = [];
  for await (const e of Deno.readDir(proc)) {
    if (!/^\d+$/.test(e.name)) continue;
    let text: string;
    try {
      text = await Deno.readTextFile(`${proc}/${e.name}/stat`);
    } catch (err) {
      // A process that ended between the listing and the read: ENOENT, or ESRCH once its task is gone.
      if (err instanceof Deno.errors.NotFound || (err as { code?: string }).code === "ESRCH") continue;
      throw err;
    }
    const st = parseProcStat(text);
    if (st !== null) out.push(st);
  }
  return out;
}

const WNOHANG = 1;

/** `waitpid(pid, &status, WNOHANG)` of libc through FFI, or null when this process may not load libc. */
export function libcWaitPid(): WaitPid | null {
  let lib;
  try {
    lib = Deno.dlopen("libc.so.6", { waitpid: { parameters: ["i32", "buffer", "i32"], result: "i32" } } as const);
  } catch (e) {
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) return null;
    throw e;
  }
  const status = new Int32Array(1);
  return (pid) => {
    const r = lib.symbols.waitpid(pid, status, WNOHANG);
    return r === pid ? status[0]! : null;
  };
}

/** What {@link OrphanReaper} needs. */
export interface ReaperOptions {
  /** The process whose adopted children it collects: PID 1. */
  readonly parent: number;
  /** The children that Deno spawned and waits for itself. */
  readonly own: () => ReadonlySet<number>;
  readonly waitpid: WaitPid;
  readonly list?: () => Promise<ProcStat[]>;
  readonly log: Logger;
}

/** Collects adopted orphans' statuses, each by its ID; see the module doc. */
export class OrphanReaper {
  #o: ReaperOptions;
  #list: () => Promise<ProcStat[]>;
  #running: Promise<void> | null = null;
  #again = false;
  #stop: (() => void) | null = null;
  /** How many adopted processes it collected. */
  reaped = 0;

  constructor(o: ReaperOptions) {
    this.#o = o;
    this.#list = o.list ?? (() => listProcesses());
  }

  /** One pass: collects every zombie child of `parent` that is not PID 1's own; returns their IDs. */
  async sweep(): Promise<number[]> {
    const own = this.#o.own();
    const done: number[] = [];
    for (const p of await this.#list()) {
      if (p.ppid !== this.#o.parent || p.state !== "Z" || own.has(p.pid)) continue;
      const status = this.#o.waitpid(p.pid);
      if (status === null) continue;
      done.push(p.pid);
      this.reaped++;
      this.#o.log.info({ orphan: p.pid, wait_status: status }, "collected an adopted orphan");
    }
    return done;
  }

  /** Runs a sweep now, or once more after the one in flight (SIGCHLDs coalesce). */
  kick(): Promise<void> {
    if (this.#running !== null) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        try {
          await this.sweep();
        } catch (e) {
          // A signal handler's pass: PID 1 must outlive it; the next SIGCHLD or the backstop tries again.
          this.#o.log.error({ err: e instanceof Error ? e.message : String(e) }, "a pass of the orphan reaper failed");
        }
      } while (this.#again);
    })().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  /** Sweeps on each SIGCHLD, and every `backstopMs` in case a signal was missed. */
  start(backstopMs = 5_000): void {
    const onChild = () => void this.kick();
    Deno.addSignalListener("SIGCHLD", onChild);
    const timer = setInterval(onChild, backstopMs);
    this.#stop = () => {
      Deno.removeSignalListener("SIGCHLD", onChild);
      clearInterval(timer);
    };
  }

  /** Stops listening; waits for a sweep in flight. */
  async stop(): Promise<void> {
    this.#stop?.();
    this.#stop = null;
    await this.#running;
  }
}
