/**
 * Test doubles for kind handlers: a handler that records its runs and, when gated, waits until the test opens it.
 *
 * @module
 */
import type { HandlerContext, HandlerResult, KindHandler } from "./handlers.ts";
import type { CommandBody } from "./command.ts";

/** A fake handler for `kind`, with optional lock keys from the body and a gate the test controls. */
export class FakeHandler implements KindHandler {
  readonly runs: string[] = [];
  readonly aborted: string[] = [];
  #gates = new Map<string, () => void>();
  #gated: boolean;
  #resources: (b: CommandBody) => readonly string[];
  #result: HandlerResult | ((ctx: HandlerContext) => Promise<HandlerResult>);

  constructor(
    readonly kind: string,
    opts: {
      gated?: boolean;
      resources?: (b: CommandBody) => readonly string[];
      result?: HandlerResult | ((ctx: HandlerContext) => Promise<HandlerResult>);
    } = {},
  ) {
    this.#gated = opts.gated ?? false;
    this.#resources = opts.resources ?? (() => []);
    this.#result = opts.result ?? {};
  }

  resources(b: CommandBody): readonly string[] {
    return this.#resources(b);
  }

  async run(ctx: HandlerContext): Promise<HandlerResult> {
    this.runs.push(ctx.command.id);
    if (this.#gated && !this.#released) {
      await new Promise<void>((resolve) => {
        this.#gates.set(ctx.command.id, resolve);
        ctx.signal.addEventListener("abort", () => this.aborted.push(ctx.command.id), { once: true });
      });
    }
    return typeof this.#result === "function" ? await this.#result(ctx) : this.#result;
  }

  /** Lets the run of `id` finish (it must have started). */
  open(id: string): void {
    const g = this.#gates.get(id);
    if (g === undefined) throw new Error(`${this.kind}: ${id} is not running`);
    this.#gates.delete(id);
    g();
  }

  #released = false;

  /** Opens every gate, now and for later runs (test teardown). */
  releaseAll(): void {
    this.#released = true;
    for (const g of this.#gates.values()) g();
    this.#gates.clear();
  }

  /** Whether `id` is running and waiting at its gate. */
  waiting(id: string): boolean {
    return this.#gates.has(id);
  }
}
