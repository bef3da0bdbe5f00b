/**
 * The BMC hosts the site agent drives (000 §Signed commands: "the site agent remembers every BMC host it drives
 * through a `bmc.*` command (`data_dir/bmc-hosts.json`)"), so that `site.httpProxy` refuses them by name and by
 * resolved address. A host is recorded before the first request goes to it (a command that fails half way has still
 * reached it) and never forgotten. The file is `{"version": 1, "hosts": [{"host", "port", "first_seen_ms",
 * "last_seen_ms", "last_kind"}]}`, hosts lowercased and sorted, written atomically; a file that does not parse is an
 * error at start, never silently an empty list (that would open the proxy to every BMC).
 *
 * @module
 */
import { atomicWrite } from "../cdi/atomic_write.ts";

/** The file's name under the data dir. */
export const BMC_HOSTS_FILE = "bmc-hosts.json";
/** The most hosts kept (a site's BMCs; the file stays small). */
export const MAX_BMC_HOSTS = 100_000;

/** One recorded BMC. */
export interface BmcHost {
  readonly host: string;
  readonly port: number;
  readonly first_seen_ms: number;
  readonly last_seen_ms: number;
  readonly last_kind: string;
}

/** A `bmc-hosts.json` that cannot be read as one. */
export class BmcHostsCorrupt extends Error {
  override name = "BmcHostsCorrupt";
}

/** The book of BMC hosts in `dataDir`. */
export class BmcHostBook {
  readonly #path: string;
  readonly #now: () => number;
  #hosts: Map<string, BmcHost> | undefined;
  #tail: Promise<void> = Promise.resolve();

  constructor(dataDir: string, now: () => number = Date.now) {
    this.#path = `${dataDir}/${BMC_HOSTS_FILE}`;
    this.#now = now;
  }

  /** Every recorded host, sorted. */
  async list(): Promise<BmcHost[]> {
    return [...(await this.#load()).values()];
  }

  /** Whether `host` (a name or an address, any case) is a recorded BMC. */
  async has(host: string): Promise<boolean> {
    return (await this.#load()).has(normalizeHost(host));
  }

  /** Records `host:port` as driven by `kind` (durable when this returns). */
  record(host: string, port: number, kind: string): Promise<void> {
    const run = this.#tail.then(async () => {
      const hosts = await this.#load();
      const key = normalizeHost(host);
      const prev = hosts.get(key);
      const now = this.#now();
      if (!prev && hosts.size >= MAX_BMC_HOSTS) {
        throw new RangeError(`${this.#path} already holds ${MAX_BMC_HOSTS} hosts`);
      }
      const next = new Map(hosts);
      next.set(key, { host: key, port, first_seen_ms: prev?.first_seen_ms ?? now, last_seen_ms: now, last_kind: kind });
      const sorted = [...next.values()].sort((a, b) => a.host < b.host ? -1 : a.host > b.host ? 1 : 0);
      await atomicWrite(this.#path, JSON.stringify({ version: 1, hosts: sorted }, null, 1) + "\n", 0o640);
      this.#hosts = new Map(sorted.map((h) => [h.host, h]));
    });
    this.#tail = run.catch((_e: unknown) => undefined); // the caller sees the failure; the next record starts afresh
    return run;
  }

  async #load(): Promise<Map<string, BmcHost>> {
    if (this.#hosts) return this.#hosts;
    let text: string;
    try {
      text = await Deno.readTextFile(this.#path);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      this.#hosts = new Map();
      return this.#hosts;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (e) {
      throw new BmcHostsCorrupt(`${this.#path} is not JSON`, { cause: e });
    }
    const hosts = (doc as { hosts?: unknown })?.hosts;
    if ((doc as { version?: unknown })?.version !== 1 || !Array.isArray(hosts)) {
      throw new BmcHostsCorrupt(`${this.#path} is not a version 1 list of hosts`);
    }
    const m = new Map<string, BmcHost>();
    for (const h of hosts) {
      if (typeof h?.host !== "string" || typeof h?.port !== "number") {
        throw new BmcHostsCorrupt(`${this.#path} holds an entry without host and port`);
      }
      m.set(normalizeHost(h.host), h as BmcHost);
    }
    this.#hosts = m;
    return m;
  }
}

/** A host as the book keys it: lowercase, without IPv6 brackets or a trailing dot. */
export function normalizeHost(host: string): string {
  return host.trim().toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
}
