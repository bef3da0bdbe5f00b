/**
 * The kinds registry's executable half: one handler per kind a build implements. The kinds table (kinds.ts) says
 * which kinds a role has and their lane and flags; a kind of the role without a handler in this build is refused
 * `UNSUPPORTED` like an unknown one.
 *
 * @module
 */
import type { Logger } from "../log/mod.ts";
import type { AnyMessage, CommandBody } from "./command.ts";
import { lookupKind } from "./kinds.ts";

/** What a handler gets while it runs. */
export interface HandlerContext {
  readonly command: CommandBody;
  /** Aborts when a cancel arrives: a handler stops between actions, and reports the real outcome of what it did. */
  readonly signal: AbortSignal;
  /** The boot the command runs in. */
  readonly bootId: string;
  readonly logger: Logger;
  /**
   * Aborts when the daemon stops (SIGTERM). A self-terminating handler that waits for its own end (`daemon.upgrade`
   * after the helper swapped the release) then throws `LeftForRecovery` (`rejection.ts`): its journal entry stays `running` for
   * the next process, and the stop is not held up.
   */
  readonly stopping?: AbortSignal;
}

/** A handler's successful outcome. */
export interface HandlerResult {
  /** The kind's result message (`<Kind>Result`). */
  readonly result?: AnyMessage;
  /** A note on a success (what was left out and why, e.g. no GPUs on a host without a driver); never parsed. */
  readonly message?: string;
}

/** One kind's implementation. */
export interface KindHandler {
  readonly kind: string;
  /**
   * The lock keys the command acts on (`gpu:<uuid>`, `disk:<path>`, `allocation:<id>`, `host`); decodes the payload
   * and throws `InvalidPayload` when it does not. Called once, after acceptance, before the command is queued.
   */
  resources?(command: CommandBody): readonly string[];
  /** The subject of the command's batch leaf; the node id when absent. */
  batchSubject?(command: CommandBody): string;
  /**
   * Performs the side effect. Throws `InvalidPayload` (`FAILED invalid-payload`), `CommandFailed` (its code), or
   * anything else (`FAILED internal`).
   */
  run(ctx: HandlerContext): Promise<HandlerResult>;
}

/** The handlers of one build, by kind. */
export class HandlerRegistry {
  readonly #byKind = new Map<string, KindHandler>();

  /** Registers a handler; its kind must be in the kinds table and registered only once. */
  register(handler: KindHandler): this {
    if (lookupKind(handler.kind) === undefined) throw new RangeError(`kind ${handler.kind} is not in the kinds table`);
    if (this.#byKind.has(handler.kind)) throw new RangeError(`kind ${handler.kind} registered twice`);
    this.#byKind.set(handler.kind, handler);
    return this;
  }

  /** The handler of `kind`, if this build has one. */
  get(kind: string): KindHandler | undefined {
    return this.#byKind.get(kind);
  }

  /** The kinds with a handler, sorted. */
  kinds(): string[] {
    return [...this.#byKind.keys()].sort();
  }
}
