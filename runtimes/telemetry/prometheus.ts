/**
 * The local `GET /metrics` (Prometheus text exposition 0.0.4) of bcd's own metrics, off by default: `[telemetry]
 * metrics_port` names a port on 127.0.0.1 (loopback only; 0 or unset: off). Each scrape collects through its own
 * reader; names get `.` → `_`, counters `_total`, histograms `_bucket`/`_sum`/`_count`.
 *
 * @module
 */
import { DataPointType, type MetricData, type ResourceMetrics } from "@opentelemetry/sdk-metrics";
import type { PullReader } from "./otlp.ts";
import type { Logger } from "../../core/log/mod.ts";

function _name(n: string): string {
  return n.replace(/[^a-zA-Z0-9_:]/g, "_");
}

function _labels(attrs: Readonly<Record<string, unknown>>, extra: Record<string, string> = {}): string {
  const all = { ...Object.fromEntries(Object.entries(attrs).map(([k, v]) => [_name(k), String(v)])), ...extra };
  const parts = Object.entries(all).map(([k, v]) =>
    `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`
  );
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

function _metric(m: MetricData, out: string[]): void {
  const base = _name(m.descriptor.name);
  if (m.dataPointType === DataPointType.SUM) {
    const name = m.isMonotonic ? `${base}_total` : base;
    out.push(`# HELP ${name} ${m.descriptor.description}`, `# TYPE ${name} ${m.isMonotonic ? "counter" : "gauge"}`);
    for (const p of m.dataPoints) out.push(`${name}${_labels(p.attributes)} ${p.value}`);
  } else if (m.dataPointType === DataPointType.GAUGE) {
    out.push(`# HELP ${base} ${m.descriptor.description}`, `# TYPE ${base} gauge`);
    for (const p of m.dataPoints) out.push(`${base}${_labels(p.attributes)} ${p.value}`);
  } else if (m.dataPointType === DataPointType.HISTOGRAM) {
    out.push(`# HELP ${base} ${m.descriptor.description}`, `# TYPE ${base} histogram`);
    for (const p of m.dataPoints) {
      let cum = 0;
      p.value.buckets.boundaries.forEach((b, i) => {
        cum += p.value.buckets.counts[i] ?? 0;
        out.push(`${base}_bucket${_labels(p.attributes, { le: String(b) })} ${cum}`);
      });
      out.push(`${base}_bucket${_labels(p.attributes, { le: "+Inf" })} ${p.value.count}`);
      out.push(
        `${base}_sum${_labels(p.attributes)} ${p.value.sum ?? 0}`,
        `${base}_count${_labels(p.attributes)} ${p.value.count}`,
      );
    }
  }
}

/** The exposition text of one collection. */
export function prometheusText(rm: ResourceMetrics): string {
  const out: string[] = [];
  for (const sm of rm.scopeMetrics) for (const m of sm.metrics) _metric(m, out);
  return out.join("\n") + "\n";
}

/** Serves `GET /metrics` on 127.0.0.1:`port` until `stop()`. */
export function serveMetrics(reader: PullReader, port: number, log: Logger): { port: number; stop(): Promise<void> } {
  const server = Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, async (req) => {
    if (new URL(req.url).pathname !== "/metrics" || req.method !== "GET") {
      return new Response("not found\n", { status: 404 });
    }
    const { resourceMetrics, errors } = await reader.collect();
    if (errors.length > 0) log.warn({ errors: errors.map(String) }, "telemetry: /metrics collection errors");
    return new Response(prometheusText(resourceMetrics), { headers: { "content-type": "text/plain; version=0.0.4" } });
  });
  log.info({ port: server.addr.port }, "telemetry: GET /metrics on loopback");
  return { port: server.addr.port, stop: () => server.shutdown() };
}
