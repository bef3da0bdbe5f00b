/**
 * bcd's telemetry over `@opentelemetry/sdk-metrics` and the OTLP/HTTP exporter (JSON): one MeterProvider per
 * configuration of the `telemetry` section, its resource bcd's own attributes (`service.name` `bcd-<role>`,
 * `service.version`, `bcd.node_id`) under the section's, exported every interval to the endpoint with the headers the
 * secret brought. A failing collector never slows the agent: the instruments are read on the SDK's own timer; the
 * exporter is wrapped so at most one export is in flight (a bounded queue of one), the next one is dropped and counted
 * while it is, and a failed or timed-out export is counted too (`bcd.telemetry.dropped`); each export is bounded by
 * the smaller of 10 s and the interval.
 *
 * The OTLP exporter reads `OTEL_EXPORTER_OTLP_*` variables (endpoint, headers, timeout, compression, certificates),
 * so the agents' permission flags name them (`roles/permissions.ts`); bcd sets none and passes everything explicitly.
 *
 * @module
 */
import type { Meter } from "@opentelemetry/api";
import {
  MeterProvider,
  MetricReader,
  PeriodicExportingMetricReader,
  type PushMetricExporter,
  type ResourceMetrics,
} from "@opentelemetry/sdk-metrics";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { OTLPMetricExporter } from "@opentelemetry/exporter-metrics-otlp-http";
import type { TelemetryPort } from "../../core/telemetry/converger.ts";
import { registerBcdMetrics, type TelemetrySources } from "../../core/telemetry/metrics.ts";
import type { TelemetryTarget } from "../../core/telemetry/section.ts";
import type { Logger } from "../../core/log/mod.ts";

type _Result = Parameters<PushMetricExporter["export"]>[1] extends (r: infer R) => void ? R : never;
const _FAILED = 1 as _Result["code"];

/** A push exporter with at most one export in flight; the others are dropped and counted. */
export class BoundedExporter implements PushMetricExporter {
  #inFlight = false;
  constructor(private readonly inner: PushMetricExporter, private readonly onDrop: (why: string) => void) {}

  export(metrics: ResourceMetrics, done: (r: _Result) => void): void {
    if (this.#inFlight) {
      this.onDrop("an export is still in flight");
      done({ code: _FAILED, error: new Error("bcd: an export is still in flight; this one is dropped") });
      return;
    }
    this.#inFlight = true;
    this.inner.export(metrics, (r) => {
      this.#inFlight = false;
      if (r.code !== 0) this.onDrop(r.error?.message ?? "the export failed");
      done(r);
    });
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
}

/** A reader the local `/metrics` endpoint pulls from. */
export class PullReader extends MetricReader {
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
}

/** Options of {@link OtlpTelemetry}. */
export interface OtlpTelemetryOptions {
  readonly role: string;
  readonly version: string;
  readonly nodeId: string;
  readonly sources: Omit<TelemetrySources, "dropped">;
  readonly log: Logger;
  /** Whether the local Prometheus endpoint reads these metrics (it gets its own reader). */
  readonly pull?: PullReader;
}

/** The telemetry port over the OpenTelemetry SDK. */
export class OtlpTelemetry implements TelemetryPort {
  #target: TelemetryTarget | undefined;
  #provider: MeterProvider | undefined;
  #dropped = 0;
  #pass: ((ms: number) => void) | undefined;
  /** The provider of the local `/metrics` reader (independent of the export's, which changes with the section). */
  readonly #local: { provider: MeterProvider; pass: (ms: number) => void } | undefined;

  constructor(private readonly o: OtlpTelemetryOptions) {
    if (o.pull) {
      const provider = new MeterProvider({ resource: this.#resource(undefined), readers: [o.pull] });
      const pass = registerBcdMetrics(provider.getMeter("bcd", o.version), {
        ...o.sources,
        dropped: () => this.#dropped,
      });
      this.#local = { provider, pass };
    }
  }

  #resource(target: TelemetryTarget | undefined) {
    return resourceFromAttributes({
      "service.name": `bcd-${this.o.role}`,
      "service.version": this.o.version,
      "bcd.node_id": this.o.nodeId,
      ...(target?.resourceAttributes ?? {}),
    });
  }

  get target(): TelemetryTarget | undefined {
    return this.#target;
  }

  /** Exports dropped or failed so far. */
  get dropped(): number {
    return this.#dropped;
  }

  /** Records a converge pass's duration (on the provider in force). */
  recordPass(ms: number): void {
    this.#pass?.(ms);
    this.#local?.pass(ms);
  }

  #build(target: TelemetryTarget, headers: Readonly<Record<string, string>>): MeterProvider {
    const readers: MetricReader[] = [];
    {
      const timeout = Math.min(10_000, target.intervalMs);
      const exporter = new BoundedExporter(
        new OTLPMetricExporter({ url: target.endpoint, headers: { ...headers }, timeoutMillis: timeout }),
        (why) => {
          this.#dropped++;
          this.o.log.warn({ endpoint: target.endpoint, why, dropped: this.#dropped }, "telemetry: export dropped");
        },
      );
      readers.push(
        new PeriodicExportingMetricReader({
          exporter,
          exportIntervalMillis: target.intervalMs,
          exportTimeoutMillis: timeout,
        }),
      );
    }
    const provider = new MeterProvider({ resource: this.#resource(target), readers });
    const meter: Meter = provider.getMeter("bcd", this.o.version);
    this.#pass = registerBcdMetrics(meter, { ...this.o.sources, dropped: () => this.#dropped });
    return provider;
  }

  configure(target: TelemetryTarget | undefined, headers: Readonly<Record<string, string>>): void {
    const old = this.#provider;
    this.#provider = target === undefined ? undefined : this.#build(target, headers);
    if (target === undefined) this.#pass = undefined;
    this.#target = target;
    // The old provider's last export may wait on a dead collector: it ends in the background.
    if (old) void old.shutdown().catch((e: unknown) => this.o.log.warn({ err: String(e) }, "telemetry: shutdown"));
  }

  /** Exports once now (tests; a clean stop). */
  async flush(): Promise<void> {
    await this.#provider?.forceFlush();
  }

  async stop(): Promise<void> {
    const p = this.#provider;
    this.#provider = undefined;
    await p?.shutdown();
    await this.#local?.provider.shutdown();
  }
}
