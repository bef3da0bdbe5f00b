/**
 * The boot server's leases (000 §NodeSpec `site`: "the boot lease state the boot server obeys"; §Kinds:
 * `boot.prepareRamdisk`, `boot.cleanUp`). A lease offers the bcd ramdisk to one machine — known by its boot NIC MACs
 * and/or its SMBIOS system UUIDs — until `expires_at_ms`; a machine with no lease, or an expired one, gets nothing to
 * boot. Leases are durable: `<data dir>/boot-leases.json` (`{"version": 1, "leases": [...]}`, mode 0600 since a lease's
 * command line carries the machine's join token) is written atomically (temporary file, fsync, rename) before the
 * command that made the change succeeds, so a site restart keeps them; a file that does not parse stops the start
 * rather than silently dropping every lease.
 *
 * A lease comes from a `boot.prepareRamdisk` command (`source: "command"`) or from the spec's `boot_leases`
 * (`source: "spec"`, replaced as a set whenever the spec's list changes); one lease per node id, the newer one
 * winning. Expired leases stay in the file until the next change (they answer nothing); `boot.cleanUp` removes one.
 *
 * @module
 */
import { atomicWrite } from "../cdi/atomic_write.ts";

/** The file's name under the data dir. */
export const BOOT_LEASES_FILE = "boot-leases.json";
/** The most leases kept. */
export const MAX_LEASES = 100_000;

/** One machine's ramdisk lease. */
export interface BootLeaseRecord {
  readonly node_id: string;
  /** Lowercase `aa:bb:cc:dd:ee:ff`. */
  readonly macs: readonly string[];
  /** Lowercase SMBIOS UUIDs (iPXE's `${uuid}`). */
  readonly system_ids: readonly string[];
  readonly kernel_sha256: string;
  readonly initrd_sha256: string;
  readonly cmdline: string;
  readonly expires_at_ms: number;
  /** The bootable ISO built for the lease (virtual media), by digest in the image cache. */
  readonly iso_sha256?: string;
  readonly source: "command" | "spec";
}

/** `m` as a lease keeps a MAC (`aa:bb:cc:dd:ee:ff`, from either separator and any case), or undefined. */
export function normalizeMac(m: string): string | undefined {
  const n = m.toLowerCase().replaceAll("-", ":");
  return /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/.test(n) ? n : undefined;
}

/** `u` as a lease keeps an SMBIOS system UUID (lowercase), or undefined. */
export function normalizeSystemId(u: string): string | undefined {
  const n = u.toLowerCase();
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(n) ? n : undefined;
}

/** Whether `id` may name a leased machine (it becomes a URL path segment). */
export function isLeaseNodeId(id: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(id);
}

/** A `boot-leases.json` that cannot be read as one. */
export class BootLeasesCorrupt extends Error {
  override name = "BootLeasesCorrupt";
}

/** The boot server's leases in `dataDir`. */
export class LeaseBook {
  readonly #path: string;
  readonly #now: () => number;
  #leases: Map<string, BootLeaseRecord> | undefined;
  #tail: Promise<void> = Promise.resolve();

  constructor(dataDir: string, now: () => number = Date.now) {
    this.#path = `${dataDir}/${BOOT_LEASES_FILE}`;
    this.#now = now;
  }

  /** Reads the file (at start: a corrupt file throws {@link BootLeasesCorrupt}). */
  async load(): Promise<void> {
    await this.#load();
  }

  /** Every lease held, live or not. */
  async list(): Promise<BootLeaseRecord[]> {
    return [...(await this.#load()).values()];
  }

  /** The live lease of the machine with one of these MACs or system UUIDs (any case), if any. */
  async find(by: { mac?: string; systemId?: string; nodeId?: string }): Promise<BootLeaseRecord | undefined> {
    const mac = by.mac?.toLowerCase();
    const uuid = by.systemId?.toLowerCase();
    const now = this.#now();
    for (const l of (await this.#load()).values()) {
      if (l.expires_at_ms <= now) continue;
      if (
        (mac !== undefined && l.macs.includes(mac)) || (uuid !== undefined && l.system_ids.includes(uuid)) ||
        (by.nodeId !== undefined && l.node_id === by.nodeId)
      ) return l;
    }
    return undefined;
  }

  /** Sets the lease of `lease.node_id` (durable when this returns). */
  put(lease: BootLeaseRecord): Promise<void> {
    return this.#change((m) => {
      if (!m.has(lease.node_id) && m.size >= MAX_LEASES) {
        throw new RangeError(`${this.#path} already holds ${MAX_LEASES} leases`);
      }
      m.set(lease.node_id, lease);
    });
  }

  /** Ends the lease of `nodeId`; whether there was one. */
  async remove(nodeId: string): Promise<boolean> {
    let had = false;
    await this.#change((m) => {
      had = m.delete(nodeId);
    });
    return had;
  }

  /** Replaces the spec's leases with `leases` (a command's lease of the same node is replaced too). */
  replaceFromSpec(leases: readonly BootLeaseRecord[]): Promise<void> {
    return this.#change((m) => {
      for (const [k, l] of m) if (l.source === "spec") m.delete(k);
      for (const l of leases) m.set(l.node_id, { ...l, source: "spec" });
    });
  }

  #change(fn: (m: Map<string, BootLeaseRecord>) => void): Promise<void> {
    const run = this.#tail.then(async () => {
      const next = new Map(await this.#load());
      fn(next);
      const sorted = [...next.values()].sort((a, b) => a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0);
      await atomicWrite(this.#path, JSON.stringify({ version: 1, leases: sorted }, null, 1) + "\n", 0o600);
      this.#leases = new Map(sorted.map((l) => [l.node_id, l]));
    });
    this.#tail = run.catch((_e: unknown) => undefined); // the caller sees the failure; the next change starts afresh
    return run;
  }

  async #load(): Promise<Map<string, BootLeaseRecord>> {
    if (this.#leases) return this.#leases;
    let text: string;
    try {
      text = await Deno.readTextFile(this.#path);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      this.#leases = new Map();
      return this.#leases;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (e) {
      throw new BootLeasesCorrupt(`${this.#path} is not JSON`, { cause: e });
    }
    const leases = (doc as { leases?: unknown })?.leases;
    if ((doc as { version?: unknown })?.version !== 1 || !Array.isArray(leases)) {
      throw new BootLeasesCorrupt(`${this.#path} is not a version 1 list of leases`);
    }
    const m = new Map<string, BootLeaseRecord>();
    for (const l of leases) {
      if (
        typeof l?.node_id !== "string" || !Array.isArray(l.macs) || !Array.isArray(l.system_ids) ||
        typeof l.expires_at_ms !== "number" || typeof l.cmdline !== "string"
      ) {
        throw new BootLeasesCorrupt(`${this.#path} holds a lease without node_id, macs, system_ids, cmdline, expiry`);
      }
      m.set(l.node_id, l as BootLeaseRecord);
    }
    this.#leases = m;
    return m;
  }
}
