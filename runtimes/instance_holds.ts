/**
 * One hold at a time per instance, for an instance runtime (libvirt-kvm and cloud-hypervisor alike): a snapshot holds
 * the instance while the converger's verbs on it wait, and the listing shows the state the instance had when the hold
 * began (a snapshot pauses or shuts the VM for a moment; no pass may resume or boot it then).
 */
import type { DomainState } from "../core/converge/instances/runtime.ts";

export class InstanceHolds {
  readonly #busy = new Map<string, { state: DomainState; done: Promise<void> }>();

  /** Runs `f` holding `id`, after every earlier hold on it ended; the listing shows `state` meanwhile. */
  async exclusive<T>(id: string, state: DomainState, f: () => Promise<T>): Promise<T> {
    await this.free(id);
    let end!: () => void;
    this.#busy.set(id, { state, done: new Promise<void>((r) => end = r) });
    try {
      return await f();
    } finally {
      this.#busy.delete(id);
      end();
    }
  }

  /** Waits until no hold is on `id`. */
  async free(id: string): Promise<void> {
    for (let b = this.#busy.get(id); b; b = this.#busy.get(id)) await b.done;
  }

  /** The state a hold on `id` shows, or undefined when none holds it. */
  stateOf(id: string): DomainState | undefined {
    return this.#busy.get(id)?.state;
  }
}
