/**
 * The `telemetry` section's converger: it configures the exporter with the section's endpoint, interval and resource
 * attributes, and the headers its `SecretRequest` (purpose `telemetry-headers`) brings. An empty endpoint turns the
 * export off. A refused headers secret fails the section `telemetry-headers-refused`; an unavailable broker keeps it
 * `PROGRESSING` (the export waits: headers usually carry the collector's credentials). An invalid section fails
 * `invalid-telemetry`.
 *
 * @module
 */
import type { ApplyContext, ApplyOutcome, SectionConverger } from "../converge/engine.ts";
import type { SecretSource } from "../converge/instances/user_data.ts";
import {
  parseHeaders,
  TelemetryRefused,
  type TelemetrySectionValue,
  type TelemetryTarget,
  telemetryTarget,
} from "./section.ts";

/** The exporter as the converger drives it. */
export interface TelemetryPort {
  /** The target in force (`undefined`: not exporting). */
  readonly target: TelemetryTarget | undefined;
  /**
   * (Re)configures the export; `undefined` stops it. Never waits on the collector; it may wait for the exporter's code
   * to load (`runtimes/telemetry/deferred.ts`).
   */
  configure(target: TelemetryTarget | undefined, headers: Readonly<Record<string, string>>): void | Promise<void>;
}

function _same(a: TelemetryTarget | undefined, b: TelemetryTarget | undefined): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/** The converger. */
export class TelemetryConverger implements SectionConverger<TelemetrySectionValue, TelemetryTarget | undefined, true> {
  readonly section = "telemetry" as const;
  constructor(private readonly port: TelemetryPort, private readonly secrets: SecretSource) {}

  observe(_ctx: ApplyContext): Promise<TelemetryTarget | undefined> {
    return Promise.resolve(this.port.target);
  }

  plan(desired: TelemetrySectionValue | undefined, observed: TelemetryTarget | undefined): readonly true[] {
    let want: TelemetryTarget | undefined;
    try {
      want = telemetryTarget(desired);
    } catch (e) {
      if (e instanceof TelemetryRefused) return [true]; // apply reports it
      throw e;
    }
    return _same(want, observed) ? [] : [true];
  }

  async apply(
    _a: readonly true[],
    desired: TelemetrySectionValue | undefined,
    ctx: ApplyContext,
  ): Promise<ApplyOutcome> {
    let want: TelemetryTarget | undefined;
    try {
      want = telemetryTarget(desired);
    } catch (e) {
      if (e instanceof TelemetryRefused) return { kind: "failed", reason: e.reason, message: e.message };
      throw e;
    }
    let headers: Record<string, string> = {};
    if (want !== undefined && want.headersRef !== "") {
      const a = await this.secrets.fetch({
        purpose: "telemetry-headers",
        ref: want.headersRef,
        allocationId: "",
        instanceId: "",
      });
      if (a.status === "refused") {
        return { kind: "failed", reason: "telemetry-headers-refused", message: a.message };
      }
      if (a.status === "unavailable") {
        return { kind: "progressing", reason: "WaitingForHeaders", message: a.message };
      }
      try {
        headers = parseHeaders(a.secret);
      } catch (e) {
        if (e instanceof TelemetryRefused) return { kind: "failed", reason: e.reason, message: e.message };
        if (e instanceof TypeError) {
          return { kind: "failed", reason: "invalid-telemetry", message: "headers are not UTF-8" };
        }
        throw e;
      }
    }
    await this.port.configure(want, headers);
    ctx.log.info({ endpoint: want?.endpoint ?? null, interval_ms: want?.intervalMs }, "telemetry: export configured");
    return { kind: "converged" };
  }
}
