/**
 * An in-memory {@link InstanceRuntime} for tests: domains in a map, and a listing that can be made to fail.
 *
 * @module
 */
import type { Domain, DomainRecord, DomainState, InstanceRuntime } from "./runtime.ts";

/** An in-memory runtime; set `listError` to make `list()` fail with it. */
export class MemoryRuntime implements InstanceRuntime {
  readonly domains = new Map<string, { state: DomainState; record: DomainRecord | undefined }>();
  listError: Error | undefined;
  readonly calls: string[] = [];

  constructor(readonly name: string) {}

  list(): Promise<Domain[]> {
    if (this.listError) return Promise.reject(this.listError);
    return Promise.resolve([...this.domains].map(([id, d]) => ({ id, state: d.state, record: d.record })));
  }

  define(record: DomainRecord): Promise<void> {
    this.calls.push(`define ${record.id}`);
    this.domains.set(record.id, { state: "stopped", record });
    return Promise.resolve();
  }

  start(id: string, paused: boolean): Promise<void> {
    return this.#set(id, paused ? "paused" : "running", "start");
  }

  pause(id: string): Promise<void> {
    return this.#set(id, "paused", "pause");
  }

  resume(id: string): Promise<void> {
    return this.#set(id, "running", "resume");
  }

  stop(id: string): Promise<void> {
    return this.#set(id, "stopped", "stop");
  }

  delete(id: string): Promise<void> {
    this.calls.push(`delete ${id}`);
    this.domains.delete(id);
    return Promise.resolve();
  }

  #set(id: string, state: DomainState, op: string): Promise<void> {
    this.calls.push(`${op} ${id}`);
    const d = this.domains.get(id);
    if (!d) return Promise.reject(new Error(`no domain ${id}`));
    d.state = state;
    return Promise.resolve();
  }
}
