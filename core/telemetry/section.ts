/**
 * The `telemetry` section (000 §NodeSpec: the OTLP endpoint, export interval, resource attributes and a secret
 * reference for headers) as the agent takes it: an https endpoint (http only to loopback, as the session URL), an
 * interval of 1 s to 1 h (default 60 s), at most 64 resource attributes of at most 256 characters each, and the
 * headers fetched with a `SecretRequest` (purpose `telemetry-headers`) in OTLP's own `key=value,key2=value2` form.
 *
 * @module
 */

/** A section the agent refuses, with its reason (`invalid-telemetry`, `telemetry-headers-refused`). */
export class TelemetryRefused extends Error {
  override name = "TelemetryRefused";
  constructor(readonly reason: string, message: string) {
    super(message);
  }
}

/** The section as decoded from the spec. */
export interface TelemetrySectionValue {
  readonly otlp_endpoint?: string;
  readonly export_interval_ms?: number;
  readonly resource_attributes?: Readonly<Record<string, string>>;
  readonly headers_secret_ref?: string;
}

/** What the exporter is configured with. */
export interface TelemetryTarget {
  /** The OTLP/HTTP metrics URL (`…/v1/metrics`). */
  readonly endpoint: string;
  readonly intervalMs: number;
  readonly resourceAttributes: Readonly<Record<string, string>>;
  /** The secret reference of the headers; `""` for none. */
  readonly headersRef: string;
}

export const DEFAULT_EXPORT_INTERVAL_MS = 60_000;
const MAX_ATTRIBUTES = 64;
const MAX_ATTRIBUTE_CHARS = 256;
/** The most bytes of headers a secret may hold, and the most headers. */
export const MAX_HEADER_BYTES = 16 * 1024;
const MAX_HEADERS = 32;

function _loopback(host: string): boolean {
  return host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The section's target, `undefined` when it sets no endpoint (no export); throws {@link TelemetryRefused}. */
export function telemetryTarget(s: TelemetrySectionValue | undefined): TelemetryTarget | undefined {
  const endpoint = s?.otlp_endpoint ?? "";
  if (endpoint === "") return undefined;
  let u: URL;
  try {
    u = new URL(endpoint);
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
    throw new TelemetryRefused("invalid-telemetry", `otlp_endpoint ${JSON.stringify(endpoint)} is not a URL`);
  }
  if (u.protocol !== "https:" && !(u.protocol === "http:" && _loopback(u.hostname))) {
    throw new TelemetryRefused("invalid-telemetry", `otlp_endpoint ${endpoint} is not https (http only to loopback)`);
  }
  const interval = s?.export_interval_ms || DEFAULT_EXPORT_INTERVAL_MS;
  if (interval < 1000 || interval > 3_600_000) {
    throw new TelemetryRefused("invalid-telemetry", `export_interval_ms ${interval} is not 1000 to 3600000`);
  }
  const attrs = s?.resource_attributes ?? {};
  const entries = Object.entries(attrs);
  if (entries.length > MAX_ATTRIBUTES) {
    throw new TelemetryRefused("invalid-telemetry", `${entries.length} resource attributes (most ${MAX_ATTRIBUTES})`);
  }
  for (const [k, v] of entries) {
    if (k === "" || k.length > MAX_ATTRIBUTE_CHARS || v.length > MAX_ATTRIBUTE_CHARS) {
      throw new TelemetryRefused(
        "invalid-telemetry",
        `resource attribute ${JSON.stringify(k.slice(0, 80))} is empty or too long`,
      );
    }
  }
  const path = u.pathname === "/" || u.pathname === "" ? "/v1/metrics" : u.pathname;
  return {
    endpoint: `${u.origin}${path}${u.search}`,
    intervalMs: interval,
    resourceAttributes: { ...attrs },
    headersRef: s?.headers_secret_ref ?? "",
  };
}

/** Parses OTLP's header form `k=v,k2=v2` (values may be percent-encoded); throws {@link TelemetryRefused}. */
export function parseHeaders(bytes: Uint8Array): Record<string, string> {
  if (bytes.length > MAX_HEADER_BYTES) {
    throw new TelemetryRefused(
      "invalid-telemetry",
      `the headers secret is ${bytes.length} bytes (most ${MAX_HEADER_BYTES})`,
    );
  }
  const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes).trim();
  const out: Record<string, string> = {};
  if (text === "") return out;
  const parts = text.split(",");
  if (parts.length > MAX_HEADERS) throw new TelemetryRefused("invalid-telemetry", `more than ${MAX_HEADERS} headers`);
  for (const p of parts) {
    const i = p.indexOf("=");
    const k = p.slice(0, i).trim();
    if (i <= 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k)) {
      throw new TelemetryRefused("invalid-telemetry", `header ${JSON.stringify(p.slice(0, 40))} is not name=value`);
    }
    let v: string;
    try {
      v = decodeURIComponent(p.slice(i + 1).trim());
    } catch (e) {
      if (!(e instanceof URIError)) throw e;
      throw new TelemetryRefused("invalid-telemetry", `header ${k}'s value is not percent-encoded text`);
    }
    // deno-lint-ignore no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(v)) {
      throw new TelemetryRefused("invalid-telemetry", `header ${k} has a control character`);
    }
    out[k] = v;
  }
  return out;
}
