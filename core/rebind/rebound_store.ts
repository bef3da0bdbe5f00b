/**
 * `data_dir/instances-rebound.json` (000 §Identity rebind): the rebind reference each instance was rebound with,
 * `{"<instance id>": "<reference>"}`, written atomically (a temporary file, fsync, rename) so a crash leaves the old
 * or the new record, never a torn one. A file that is not such an object is refused with a typed error naming it
 * (never silently reset: a lost record would report nothing, which fails closed, but the operator should know).
 *
 * @module
 */

/** Where the records live. */
export interface ReboundStore {
  load(): Promise<Record<string, string>>;
  save(records: Readonly<Record<string, string>>): Promise<void>;
}

/** The file's name under the data dir. */
export const REBOUND_FILE = "instances-rebound.json";
const _MAX = 4 * 1024 * 1024;

/** The file is not a record of references. */
export class ReboundFileCorrupt extends Error {
  override name = "ReboundFileCorrupt";
}

/** The records in `<dataDir>/instances-rebound.json`. */
export class ReboundFile implements ReboundStore {
  readonly path: string;
  constructor(dataDir: string) {
    this.path = `${dataDir}/${REBOUND_FILE}`;
  }

  async load(): Promise<Record<string, string>> {
    let text: string;
    try {
      const st = await Deno.stat(this.path);
      if (st.size > _MAX) throw new ReboundFileCorrupt(`${this.path} is ${st.size} bytes; at most ${_MAX}`);
      text = await Deno.readTextFile(this.path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return {};
      throw e;
    }
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch (e) {
      if (e instanceof SyntaxError) throw new ReboundFileCorrupt(`${this.path} is not JSON: ${e.message}`);
      throw e;
    }
    if (typeof v !== "object" || v === null || Array.isArray(v)) {
      throw new ReboundFileCorrupt(`${this.path} is not a JSON object`);
    }
    const out: Record<string, string> = {};
    for (const [k, r] of Object.entries(v)) {
      if (typeof r !== "string") throw new ReboundFileCorrupt(`${this.path}: ${JSON.stringify(k)} is not a reference`);
      out[k] = r;
    }
    return out;
  }

  /**
   * Writes `records` (as they are at the call) through a temp file and a rename. Saves are written one at a time in
   * call order: two rebinds that end together (one per instance) each save, and two writers of the one temp file
   * would truncate each other's bytes or rename it from under each other.
   */
  save(records: Readonly<Record<string, string>>): Promise<void> {
    const bytes = new TextEncoder().encode(JSON.stringify(records) + "\n");
    const done = this.#saved.then(() => this.#write(bytes));
    // Only the order is chained: the caller of this save gets its failure, the next save still runs.
    this.#saved = done.then(() => {}, () => {});
    return done;
  }

  #saved: Promise<void> = Promise.resolve();

  async #write(bytes: Uint8Array): Promise<void> {
    const tmp = `${this.path}.tmp`;
    const f = await Deno.open(tmp, { write: true, create: true, truncate: true, mode: 0o600 });
    try {
      for (let off = 0; off < bytes.length;) off += await f.write(bytes.subarray(off));
      await f.sync();
    } finally {
      f.close();
    }
    await Deno.rename(tmp, this.path);
  }
}
