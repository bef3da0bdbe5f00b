/**
 * The agents' telemetry port, loading the OpenTelemetry SDK (`otlp.ts`: `@opentelemetry/sdk-metrics`, the OTLP/HTTP
 * exporter and their dependencies, about 500 module files in two versions) only once something needs it: the
 * `telemetry` section names an endpoint, or `[telemetry] metrics_port` asks for the local `/metrics` (then at start,
 * see {@link loadPullReader}). An agent that exports nothing never loads the SDK; one that does loads it on its first
 * convergence of the section, after its `Hello` went out. Loading it at start cost about a third of the node's time
 * to its first `Hello` (issue 24).
 *
 * Until the SDK is loaded there is no provider, so there is nothing to record: {@link DeferredTelemetry.recordPass}
 * then does nothing, exactly as {@link OtlpTelemetry.recordPass} does without a target.
 *
 * @module
 */
import type { TelemetryPort } from "../../core/telemetry/converger.ts";
import type { TelemetryTarget } from "../../core/telemetry/section.ts";
import type { OtlpTelemetry, OtlpTelemetryOptions, PullReader } from "./otlp.ts";

/** Loads the SDK-backed module (the dynamic import is the point: nothing here imports it statically). */
function _load(): Promise<typeof import("./otlp.ts")> {
  return import("./otlp.ts");
}

/** A reader for the local `/metrics` endpoint; loads the SDK (call it only when `metrics_port` asks for it). */
export async function loadPullReader(): Promise<PullReader> {
  return new (await _load()).PullReader();
}

/** {@link OtlpTelemetry} behind a port that loads it on first use. */
export class DeferredTelemetry implements TelemetryPort {
  #real: OtlpTelemetry | undefined;
  #loading: Promise<OtlpTelemetry> | undefined;

  private constructor(private readonly o: OtlpTelemetryOptions) {}

  /** The port; with `o.pull` (whose reader already loaded the SDK) the SDK-backed telemetry is built now. */
  static async create(o: OtlpTelemetryOptions): Promise<DeferredTelemetry> {
    const t = new DeferredTelemetry(o);
    if (o.pull) await t.#load();
    return t;
  }

  #load(): Promise<OtlpTelemetry> {
    this.#loading ??= _load().then((m) => this.#real = new m.OtlpTelemetry(this.o));
    return this.#loading;
  }

  /** Whether the SDK has been loaded (tests). */
  get loaded(): boolean {
    return this.#real !== undefined;
  }

  get target(): TelemetryTarget | undefined {
    return this.#real?.target;
  }

  /** Exports dropped or failed so far. */
  get dropped(): number {
    return this.#real?.dropped ?? 0;
  }

  /** Records a converge pass's duration (on the provider in force; none before the SDK is loaded). */
  recordPass(ms: number): void {
    this.#real?.recordPass(ms);
  }

  /** (Re)configures the export, loading the SDK the first time a target is set; `undefined` before that is a no-op. */
  async configure(target: TelemetryTarget | undefined, headers: Readonly<Record<string, string>>): Promise<void> {
    if (target === undefined && this.#loading === undefined) return;
    (await this.#load()).configure(target, headers);
  }

  /** Exports once now (tests; a clean stop). */
  async flush(): Promise<void> {
    await (await this.#loading)?.flush();
  }

  async stop(): Promise<void> {
    await (await this.#loading)?.stop();
  }
}
