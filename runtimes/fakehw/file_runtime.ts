/**
 * The sim's instance runtime: each domain is one JSON file under its directory, so domains outlive the daemon
 * process as real VMs do. Files written by bcd carry its record (the ownership mark); a file without one is an
 * unmanaged domain.
 *
 * @module
 */
import {
  type Domain,
  type DomainRecord,
  type DomainState,
  type InstanceRuntime,
  RuntimeRefused,
} from "../../core/converge/instances/runtime.ts";

interface _File {
  readonly state: DomainState;
  readonly record?: DomainRecord;
}

const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const MAX_FILE = 64 * 1024;

/** A file-backed runtime named `sim`. */
export class FileRuntime implements InstanceRuntime {
  readonly name: string;
  readonly #parsed = new Map<string, { key: string; file: _File }>();
  constructor(readonly dir: string, name = "sim") {
    this.name = name;
  }

  #path(id: string): string {
    if (!ID.test(id)) throw new RuntimeRefused("invalid-instance-id", `instance id ${JSON.stringify(id)} is not valid`);
    return `${this.dir}/${id}.json`;
  }

  async #read(id: string): Promise<_File | undefined> {
    try {
      const st = await Deno.stat(this.#path(id));
      if (st.size > MAX_FILE) throw new RuntimeRefused("invalid-domain", `domain file of ${id} is too large`);
      return JSON.parse(await Deno.readTextFile(this.#path(id))) as _File;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    }
  }

  /**
   * A domain file, parsed again only when its inode, size or mtime changed since the last listing. The stat is
   * synchronous (a few µs; an async one is a round trip through the runtime's blocking pool, ~20 µs here, and a
   * listing stats every domain).
   */
  async #readCached(id: string): Promise<_File | undefined> {
    let st: Deno.FileInfo;
    try {
      st = Deno.statSync(this.#path(id));
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    }
    const key = `${st.ino}:${st.size}:${st.mtime?.getTime()}`;
    const hit = this.#parsed.get(id);
    if (hit?.key === key) return hit.file;
    const file = await this.#read(id);
    if (file) this.#parsed.set(id, { key, file });
    return file;
  }

  async #write(id: string, f: _File): Promise<void> {
    await Deno.mkdir(this.dir, { recursive: true });
    const tmp = `${this.#path(id)}.tmp`;
    await Deno.writeTextFile(tmp, JSON.stringify(f));
    await Deno.rename(tmp, this.#path(id));
  }

  async list(): Promise<Domain[]> {
    const out: Domain[] = [];
    try {
      const ids: string[] = [];
      for (const e of Deno.readDirSync(this.dir)) {
        if (!e.isFile || !e.name.endsWith(".json")) continue;
        const id = e.name.slice(0, -5);
        if (ID.test(id)) ids.push(id);
      }
      const files = await Promise.all(ids.map((id) => this.#readCached(id)));
      for (const id of this.#parsed.keys()) if (!ids.includes(id)) this.#parsed.delete(id);
      ids.forEach((id, i) => {
        const f = files[i];
        if (f) out.push({ id, state: f.state, record: f.record });
      });
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return out.sort((a, b) => a.id < b.id ? -1 : 1);
  }

  async define(record: DomainRecord): Promise<void> {
    const have = await this.#read(record.id);
    if (have && !have.record) {
      throw new RuntimeRefused("unmanaged-domain", `domain ${record.id} exists and is not bcd's; never defined over`);
    }
    if (record.vcpus < 1 || record.memoryBytes < 1) {
      throw new RuntimeRefused("invalid-size", `instance ${record.id} needs at least 1 vCPU and some memory`);
    }
    const { launch: _launch, ...kept } = record;
    await this.#write(record.id, { state: have?.state ?? "stopped", record: kept });
  }

  async #set(id: string, state: DomainState): Promise<void> {
    const f = await this.#read(id);
    if (!f) throw new RuntimeRefused("no-domain", `no domain ${id}`);
    if (!f.record) throw new RuntimeRefused("unmanaged-domain", `domain ${id} is not bcd's; never touched`);
    await this.#write(id, { ...f, state });
  }

  start(id: string, paused: boolean): Promise<void> {
    return this.#set(id, paused ? "paused" : "running");
  }
  pause(id: string): Promise<void> {
    return this.#set(id, "paused");
  }
  resume(id: string): Promise<void> {
    return this.#set(id, "running");
  }
  stop(id: string): Promise<void> {
    return this.#set(id, "stopped");
  }

  async delete(id: string): Promise<void> {
    const f = await this.#read(id);
    if (!f) return;
    if (!f.record) throw new RuntimeRefused("unmanaged-domain", `domain ${id} is not bcd's; never removed`);
    await Deno.remove(this.#path(id));
  }
}
