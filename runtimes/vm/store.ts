/**
 * The sandbox store: one directory per sandbox, holding its lock and its records.
 *
 * | file | written by | what |
 * | --- | --- | --- |
 * | `lock` | every command | the sandbox's lock (`flock`), held while a command reads or writes the records |
 * | `runtime-adapter-staged.json` | `stage` | the staged images' bindings (`staged.ts`) |
 * | `runtime-adapter.json` | `launch`, before it spawns the VMM | the launch record: mode, command line, plan, bindings, root configuration |
 * | `launch.journal` | `launch`, until it commits | the VMM a launch spawned (its verified identity), so that nothing it started is lost |
 * | `runtime.json` | `launch`, at commit | the runtime record: the VMM's identity, the runtime identity, the last epoch |
 * | `initrd.img`, `control.sock`, `vmm.log` | `launch` | the VM's initramfs, its control socket, the VMM's output |
 * | `capability` | `launch`, before it writes the initramfs | the VM's launch capability (64 hex digits), which is also its channel key: every attach proves it (`core/framing/attach.ts`) |
 *
 * The scratch image's claim lies beside the image, in `IMAGE.bcd-claim` (its own `flock` guards it): the store and the
 * verified process identity of whoever claims it — the launch while it checks, then the VMM. A claim whose process is
 * gone is free, so a launch that died releases it with its process.
 *
 * @module
 */
import { join } from "node:path";
import type { RuntimeIdentity } from "./artifacts.ts";
import { identify, isAlive, type ProcessIdentity } from "./process_identity.ts";

export const LOCK_FILE = "lock";
export const LAUNCH_RECORD = "runtime-adapter.json";
export const LAUNCH_JOURNAL = "launch.journal";
export const RUNTIME_RECORD = "runtime.json";
export const INITRAMFS_FILE = "initrd.img";
export const CONTROL_SOCKET = "control.sock";
export const VMM_LOG = "vmm.log";
export const CAPABILITY_FILE = "capability";

/** A record of the store that does not decode. */
export class StoreRecordInvalid extends Error {
  override name = "StoreRecordInvalid";
}

/** The scratch image is claimed by another sandbox's VM. */
export class ScratchClaimed extends Error {
  override name = "ScratchClaimed";
}

/** The runtime record: what runs, and how to find it again. */
export interface RuntimeRecord {
  readonly format: 1;
  readonly vmm: ProcessIdentity;
  readonly identity: RuntimeIdentity;
  readonly mode: "layered" | "blockless";
  /** The attachments so far; the next one is epoch + 1. */
  readonly epoch: number;
}

/** The launch journal: the VMM a launch spawned, before it commits. */
export interface LaunchJournal {
  readonly format: 1;
  readonly vmm: ProcessIdentity | null;
}

function _isIdentity(o: unknown): o is ProcessIdentity {
  const r = o as ProcessIdentity;
  return typeof o === "object" && o !== null && Number.isInteger(r.pid) && r.pid > 0 &&
    typeof r.startTime === "string" && /^\d+$/.test(r.startTime) && Object.keys(o).length === 2;
}

/** Decodes the runtime record (strict). */
export function decodeRuntimeRecord(text: string): RuntimeRecord {
  const o = JSON.parse(text) as Record<string, unknown>;
  const id = o.identity as Record<string, unknown> | undefined;
  if (
    o.format !== 1 || !_isIdentity(o.vmm) || typeof id !== "object" || id === null ||
    typeof id.kernel !== "string" || typeof id.initramfs !== "string" ||
    (o.mode !== "layered" && o.mode !== "blockless") || !Number.isInteger(o.epoch) ||
    Object.keys(o).sort().join(",") !== "epoch,format,identity,mode,vmm"
  ) {
    throw new StoreRecordInvalid(`${RUNTIME_RECORD} does not decode: ${text.slice(0, 200)}`);
  }
  return o as unknown as RuntimeRecord;
}

/** A sandbox store. */
export class SandboxStore {
  #lock: Deno.FsFile | null = null;

  constructor(readonly dir: string) {}

  path(name: string): string {
    return join(this.dir, name);
  }

  /** Creates the store if needed and takes its lock (waits for another command's). */
  async lock(): Promise<void> {
    await Deno.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const f = await Deno.open(this.path(LOCK_FILE), { create: true, write: true, mode: 0o600 });
    await f.lock(true);
    this.#lock = f;
  }

  unlock(): void {
    this.#lock?.close();
    this.#lock = null;
  }

  /** Writes `name` durably through a temporary name and a rename. */
  async write(name: string, text: string): Promise<void> {
    const tmp = this.path(`.${name}.tmp`);
    const f = await Deno.open(tmp, { create: true, write: true, truncate: true, mode: 0o600 });
    try {
      await f.write(new TextEncoder().encode(text));
      await f.sync();
    } finally {
      f.close();
    }
    await Deno.rename(tmp, this.path(name));
  }

  /** The text of `name`, or null when it is not there. */
  async read(name: string): Promise<string | null> {
    try {
      return await Deno.readTextFile(this.path(name));
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    }
  }

  async remove(name: string): Promise<void> {
    try {
      await Deno.remove(this.path(name));
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  }

  async exists(name: string): Promise<boolean> {
    return (await this.read(name).catch((e) => {
      if (e instanceof Deno.errors.IsADirectory) return "";
      throw e;
    })) !== null;
  }

  async runtimeRecord(): Promise<RuntimeRecord | null> {
    const t = await this.read(RUNTIME_RECORD);
    return t === null ? null : decodeRuntimeRecord(t);
  }

  async journal(): Promise<LaunchJournal | null> {
    const t = await this.read(LAUNCH_JOURNAL);
    if (t === null) return null;
    const o = JSON.parse(t) as LaunchJournal;
    if (o.format !== 1 || (o.vmm !== null && !_isIdentity(o.vmm))) {
      throw new StoreRecordInvalid(`${LAUNCH_JOURNAL} does not decode: ${t.slice(0, 200)}`);
    }
    return o;
  }

  /** The VMM that the store says runs (committed, or journaled by a launch that never committed), if it still does. */
  async runningVmm(): Promise<ProcessIdentity | null> {
    const r = await this.runtimeRecord();
    if (r !== null && await isAlive(r.vmm)) return r.vmm;
    const j = await this.journal();
    if (j?.vmm && await isAlive(j.vmm)) return j.vmm;
    return null;
  }
}

/** The claim file of a scratch image. */
export function claimPath(scratch: string): string {
  return `${scratch}.bcd-claim`;
}

interface Claim {
  readonly store: string;
  readonly holder: ProcessIdentity;
}

async function _withClaimFile<T>(
  scratch: string,
  fn: (read: () => Promise<Claim | null>, write: (c: Claim | null) => Promise<void>) => Promise<T>,
): Promise<T> {
  const f = await Deno.open(claimPath(scratch), { create: true, read: true, write: true, mode: 0o600 });
  try {
    await f.lock(true);
    const read = async () => {
      const t = await Deno.readTextFile(claimPath(scratch));
      if (t.trim() === "") return null;
      return JSON.parse(t) as Claim;
    };
    const write = async (c: Claim | null) => {
      await f.truncate(0);
      await f.seek(0, Deno.SeekMode.Start);
      if (c !== null) await f.write(new TextEncoder().encode(JSON.stringify(c)));
      await f.sync();
    };
    return await fn(read, write);
  } finally {
    f.close();
  }
}

async function _refuseOthers(scratch: string, store: string, c: Claim | null): Promise<void> {
  if (c !== null && c.store !== store && await isAlive(c.holder)) {
    throw new ScratchClaimed(
      `${scratch} is claimed by the VM of sandbox ${c.store} (pid ${c.holder.pid}), which still runs`,
    );
  }
}

/** Claims the scratch image for `store`, held by `holder`; refuses a claim of another sandbox whose holder lives. */
export async function claimScratch(scratch: string, store: string, holder: ProcessIdentity): Promise<void> {
  await _withClaimFile(scratch, async (read, write) => {
    await _refuseOthers(scratch, store, await read());
    await write({ store, holder });
  });
}

/**
 * Refuses ({@link ScratchClaimed}) when another sandbox's VM that still runs holds the scratch image, and claims
 * nothing. A launch asks this before it checks the image's binding: that VM writes to the image, so its binding
 * (mtime) may have changed too, and the claim is the refusal that says why.
 */
export async function refuseOthersClaim(scratch: string, store: string): Promise<void> {
  await _withClaimFile(scratch, async (read) => await _refuseOthers(scratch, store, await read()));
}

/** Releases `store`'s claim of the scratch image (another sandbox's is left alone). */
export async function releaseScratch(scratch: string, store: string): Promise<void> {
  await _withClaimFile(scratch, async (read, write) => {
    const c = await read();
    if (c !== null && c.store === store) await write(null);
  });
}

/** The claim's holder, if it still lives (tests, and what a paused launch shows). */
export async function scratchClaim(scratch: string): Promise<Claim | null> {
  return await _withClaimFile(scratch, async (read) => {
    const c = await read();
    return c !== null && await isAlive(c.holder) ? c : null;
  });
}

/** This process's identity. */
export async function selfIdentity(): Promise<ProcessIdentity> {
  const id = await identify(Deno.pid);
  if (id === null) throw new Error("cannot read this process's own /proc entry");
  return id;
}
