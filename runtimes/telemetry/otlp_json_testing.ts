/**
 * Tests' reading of an OTLP/HTTP JSON metrics export (the body `OtlpTelemetry` posts): the resource's attributes
 * and each metric's data points, typed. The body is checked as it is read — a field of the wrong type fails with
 * its path — so a test never reads a value through `any`. Only what bcd exports is read: string attributes, sums,
 * gauges and histograms, points as `asInt` (a string or a number in OTLP JSON), `asDouble` or a histogram's
 * `count`.
 *
 * @module
 */

/** A data point: its attributes and its value. */
export interface OtlpPoint {
  readonly attrs: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A decoded export: the first resource's attributes and each metric's points by name. */
export interface OtlpExport {
  readonly resource: Readonly<Record<string, string>>;
  readonly points: ReadonlyMap<string, readonly OtlpPoint[]>;
}

/** The body is not an export of the shape this reader knows. */
export class OtlpShapeError extends TypeError {
  override name = "OtlpShapeError";
}

type Json = unknown;

function obj(v: Json, path: string): Record<string, Json> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new OtlpShapeError(`${path} is not an object`);
  return v as Record<string, Json>;
}

function arr(v: Json, path: string): Json[] {
  if (!Array.isArray(v)) throw new OtlpShapeError(`${path} is not an array`);
  return v;
}

function str(v: Json, path: string): string {
  if (typeof v !== "string") throw new OtlpShapeError(`${path} is not a string`);
  return v;
}

/** `[{ key, value: { stringValue } }]` at `path` (absent: none). */
function attributes(v: Json, path: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (v === undefined) return out;
  arr(v, path).forEach((a, i) => {
    const o = obj(a, `${path}[${i}]`);
    out[str(o.key, `${path}[${i}].key`)] = str(obj(o.value, `${path}[${i}].value`).stringValue, `${path}[${i}].value`);
  });
  return out;
}

function pointValue(p: Record<string, Json>, path: string): number {
  for (const k of ["asInt", "asDouble", "count"]) {
    const v = p[k];
    if (v === undefined) continue;
    const n = typeof v === "string" && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
    if (typeof n !== "number" || !Number.isFinite(n)) throw new OtlpShapeError(`${path}.${k} is not a number`);
    return n;
  }
  return 0;
}

/** Decodes an export's JSON body (see the module's doc); throws {@link OtlpShapeError}. */
export function decodeOtlpExport(body: Json): OtlpExport {
  const rm = obj(arr(obj(body, "body").resourceMetrics, "resourceMetrics")[0], "resourceMetrics[0]");
  const resource = attributes(obj(rm.resource, "resource").attributes, "resource.attributes");
  const points = new Map<string, OtlpPoint[]>();
  arr(rm.scopeMetrics, "scopeMetrics").forEach((sm, i) => {
    arr(obj(sm, `scopeMetrics[${i}]`).metrics, `scopeMetrics[${i}].metrics`).forEach((mv, j) => {
      const path = `scopeMetrics[${i}].metrics[${j}]`;
      const m = obj(mv, path);
      const kind = ["sum", "gauge", "histogram"].find((k) => m[k] !== undefined);
      const dps = kind === undefined ? [] : arr(obj(m[kind], `${path}.${kind}`).dataPoints, `${path}.dataPoints`);
      points.set(
        str(m.name, `${path}.name`),
        dps.map((pv, k) => {
          const p = obj(pv, `${path}.dataPoints[${k}]`);
          return { attrs: attributes(p.attributes, `${path}.dataPoints[${k}].attributes`), value: pointValue(p, path) };
        }),
      );
    });
  });
  return { resource, points };
}
