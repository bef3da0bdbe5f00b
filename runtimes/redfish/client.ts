/**
 * A Redfish client for one BMC (DMTF DSP0266): JSON over HTTPS with the BMC's credentials, by session (a
 * `SessionService` session's `X-Auth-Token`, logged out on {@link RedfishClient.close}) or by basic auth. `auth:
 * "auto"` (the default, as Ironic's `redfish` driver does) opens a session and falls back to basic auth when the BMC
 * has no `SessionService` (404/405). TLS is pinned per BMC: `certSha256` (the leaf's SHA-256, `socket_transport.ts`) or
 * `caPem` (Deno's `fetch` with that CA); plain `http:` only to a loopback address (tests).
 *
 * Every answer is bounded (`maxResponseBytes`, default 4 MiB) and timed (`timeoutMs` per request, default 30 s, on the
 * injected clock); a redirect is refused; `@odata.id` links and task monitors are followed only on the same BMC
 * (a path under `/redfish/`), so a BMC cannot send the client and its credentials elsewhere. A PATCH carries the
 * resource's ETag in `If-Match` when the BMC gave one (`bmc-etag-mismatch` on 412). Long actions answer 202 with a task
 * monitor, which {@link RedfishClient.waitTask} polls until the task ends. Failures are {@link RedfishError}s.
 *
 * @example
 * ```ts
 * const c = new RedfishClient({ host: "10.0.0.5", credentials, certSha256: "ab12…" });
 * const system = await c.get(await c.systemPath(""));
 * await c.close();
 * ```
 *
 * @module
 */
import { type Clock, realClock } from "../../core/clock.ts";
import { RedfishError, statusError } from "./errors.ts";
import { SocketTransport } from "./socket_transport.ts";
import {
  FetchTransport,
  type RedfishTransport,
  type StreamedBody,
  type TransportRequest,
  type TransportResponse,
} from "./transport.ts";

/** A BMC account's credentials; never logged. */
export interface RedfishCredentials {
  readonly username: string;
  readonly password: string;
}

/** A JSON object the BMC sent. */
export type RedfishResource = Record<string, unknown>;

/** Options of {@link RedfishClient}. */
export interface RedfishClientOptions {
  readonly host: string;
  /** 443 by default. */
  readonly port?: number;
  /** `https` (default); `http` only to a loopback address. */
  readonly scheme?: "https" | "http";
  readonly credentials: RedfishCredentials;
  readonly auth?: "auto" | "session" | "basic";
  readonly caPem?: string;
  readonly certSha256?: string;
  readonly clock?: Pick<Clock, "setTimer" | "sleep" | "monotonic">;
  readonly timeoutMs?: number;
  readonly maxResponseBytes?: number;
  /** Replaces the transport the pins choose (tests). */
  readonly transport?: RedfishTransport;
  readonly signal?: AbortSignal;
}

/** A request's answer: the parsed JSON body (`{}` when empty), its ETag and Location. */
export interface RedfishAnswer {
  readonly status: number;
  readonly body: RedfishResource;
  readonly etag?: string;
  readonly location?: string;
  readonly retryAfterS?: number;
}

/** Task states that are still running (Redfish `TaskState`). */
const RUNNING_TASK = new Set([
  "New",
  "Starting",
  "Running",
  "Pending",
  "Stopping",
  "Suspended",
  "Service",
  "Interrupted",
]);
/** Task states that ended badly. */
const FAILED_TASK = new Set(["Exception", "Killed", "Cancelled"]);

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

/** See the module doc. */
export class RedfishClient {
  readonly #o: RedfishClientOptions;
  readonly #base: URL;
  readonly #transport: RedfishTransport;
  readonly #upload: RedfishTransport;
  readonly #clock: Pick<Clock, "setTimer" | "sleep" | "monotonic">;
  #mode: "unknown" | "session" | "basic";
  #token: string | undefined;
  #sessionPath: string | undefined;

  constructor(o: RedfishClientOptions) {
    this.#o = o;
    const scheme = o.scheme ?? "https";
    const host = o.host.includes(":") && !o.host.startsWith("[") ? `[${o.host}]` : o.host;
    this.#base = new URL(`${scheme}://${host}${o.port ? `:${o.port}` : ""}`);
    if (scheme === "http" && !_isLoopback(this.#base.hostname)) {
      throw new RangeError(`plain http to the BMC ${o.host} is refused; only a loopback address may skip TLS`);
    }
    this.#clock = o.clock ?? realClock;
    this.#transport = o.transport ??
      (o.certSha256
        ? new SocketTransport({ peer: { certSha256: o.certSha256 }, clock: this.#clock })
        : new FetchTransport({ ...(o.caPem ? { caPem: o.caPem } : {}), clock: this.#clock }));
    this.#upload = o.transport ??
      (o.certSha256
        ? this.#transport
        : new SocketTransport({ peer: o.caPem ? { caPem: o.caPem } : "system-roots", clock: this.#clock }));
    this.#mode = o.auth === "basic" ? "basic" : o.auth === "session" ? "session" : "unknown";
  }

  /** `host:port` of the BMC, as recorded. */
  get origin(): string {
    return this.#base.host;
  }

  /** Which authentication is in use once a request went out (`unknown` before). */
  get authMode(): "unknown" | "session" | "basic" {
    return this.#mode;
  }

  /** GETs a resource. */
  get(path: string): Promise<RedfishAnswer> {
    return this.#call("GET", path);
  }

  /** POSTs `body` (an action or a new member). */
  post(path: string, body: unknown): Promise<RedfishAnswer> {
    return this.#call("POST", path, body);
  }

  /** PATCHes `body`; `etag` (from a GET) goes in `If-Match`. */
  patch(path: string, body: unknown, etag?: string): Promise<RedfishAnswer> {
    return this.#call("PATCH", path, body, etag ? { "If-Match": etag } : {});
  }

  /** DELETEs a resource. */
  delete(path: string): Promise<RedfishAnswer> {
    return this.#call("DELETE", path);
  }

  /**
   * POSTs a streamed body (a firmware image to `HttpPushUri` or `MultipartHttpPushUri`) with its `Content-Length`,
   * once: a stream cannot be sent again, so the session is opened first and a 401 fails `bmc-auth` rather than being
   * retried. `path` may lie outside `/redfish/` (DMTF's mockup pushes to `/FWUpdate`, some vendors to a CGI path) but
   * never off the BMC ({@link checkPushPath}). `timeoutMs` bounds the whole upload and answer.
   */
  async upload(
    path: string,
    body: StreamedBody,
    o: { contentType: string; timeoutMs: number },
  ): Promise<RedfishAnswer> {
    const p = checkPushPath(path, this.#base);
    if (this.#mode !== "basic" && this.#token === undefined) await this.#openSession();
    const res = await this.#upload.request({
      method: "POST",
      url: new URL(p, this.#base),
      headers: {
        Accept: "application/json",
        "OData-Version": "4.0",
        "Content-Type": o.contentType,
        ...this.#authHeader(),
      },
      body,
      timeoutMs: o.timeoutMs,
      maxBytes: this.#o.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      ...(this.#o.signal ? { signal: this.#o.signal } : {}),
    });
    return this.#answer("POST", p, res);
  }

  /** The members' `@odata.id`s of a collection, following `Members@odata.nextLink` (at most 64 pages). */
  async members(path: string): Promise<string[]> {
    const out: string[] = [];
    let next: string | undefined = path;
    for (let page = 0; next !== undefined && page < 64; page++) {
      const { body } = await this.get(next);
      const list = body.Members;
      if (!Array.isArray(list)) throw new RedfishError("bmc-bad-response", `${next} is not a collection`);
      for (const m of list) out.push(odataId(m, `${next} Members`));
      const nl = body["Members@odata.nextLink"];
      next = typeof nl === "string" ? checkPath(nl, `${path} nextLink`) : undefined;
    }
    return out;
  }

  /**
   * The path of system `id`, or of the only system when `id` is empty. `id` is matched against the members' last path
   * segment first, then against each member's `Id`, `Name` and `UUID` (sushy-tools lists libvirt domains by UUID and
   * knows them by name too); at most 64 members are read.
   */
  async systemPath(id: string): Promise<string> {
    const root = await this.get("/redfish/v1/");
    const members = await this.members(link(root.body, "Systems", "/redfish/v1/"));
    if (id === "") {
      if (members.length !== 1) {
        throw new RedfishError("bmc-refused", `the BMC has ${members.length} systems; the target must name one`);
      }
      return members[0]!;
    }
    const hit = members.find((m) => m.replace(/\/$/, "").split("/").pop() === id);
    if (hit) return hit;
    for (const m of members.slice(0, 64)) {
      const b = (await this.get(m)).body;
      if (b.Id === id || b.Name === id || b.UUID === id) return m;
    }
    throw new RedfishError("bmc-refused", `the BMC has no system ${JSON.stringify(id)} (it has ${members.length})`);
  }

  /**
   * Waits for a task monitor (an action's 202 `Location`) or a task resource to end: polls on the injected clock
   * every `Retry-After` (1–30 s, default `pollMs`) until `timeoutMs`; a task that ends `Exception`, `Killed` or
   * `Cancelled` fails `bmc-error` with its messages; a monitor that answers with anything but a running task is the
   * action's result.
   */
  async waitTask(monitor: string, o: { timeoutMs: number; pollMs?: number }): Promise<RedfishAnswer> {
    const path = checkPath(monitor, "task monitor");
    const deadline = this.#clock.monotonic() + o.timeoutMs;
    for (;;) {
      const a = await this.get(path);
      const state = typeof a.body.TaskState === "string" ? a.body.TaskState : undefined;
      if (state !== undefined && FAILED_TASK.has(state)) {
        const msgs = Array.isArray(a.body.Messages) ? a.body.Messages : [];
        const said = msgs.map((m) => (m as RedfishResource)?.Message).filter((m) => typeof m === "string").join("; ");
        throw new RedfishError("bmc-error", `task ${path} ended ${state}${said ? `: ${said}` : ""}`, {
          status: a.status,
        });
      }
      if (a.status !== 202 && (state === undefined || !RUNNING_TASK.has(state))) return a;
      const wait = Math.min(30, Math.max(1, a.retryAfterS ?? (o.pollMs ?? 2000) / 1000)) * 1000;
      if (this.#clock.monotonic() + wait > deadline) {
        throw new RedfishError("bmc-timeout", `task ${path} still ${state ?? "running"} after ${o.timeoutMs} ms`);
      }
      await this.#clock.sleep(wait, this.#o.signal);
      if (this.#o.signal?.aborted) throw new DOMException("cancelled while waiting for a task", "AbortError");
    }
  }

  /**
   * Logs the session out (a BMC has few session slots) and releases the transport. Never throws: a logout the BMC
   * refuses (the session already ended, a password changed under it) or cannot be reached for is returned instead,
   * since a command's outcome does not depend on it.
   */
  async close(): Promise<RedfishError | undefined> {
    const path = this.#sessionPath;
    const token = this.#token;
    this.#sessionPath = undefined;
    this.#token = undefined;
    try {
      if (path && token) {
        const res = await this.#send("DELETE", path, undefined, { "X-Auth-Token": token });
        if (res.status >= 400) return statusError("DELETE", path, res.status, _json(res.body, "DELETE", path, true));
      }
      return undefined;
    } catch (e) {
      if (e instanceof RedfishError) return e;
      throw e;
    } finally {
      this.#transport.close();
      if (this.#upload !== this.#transport) this.#upload.close();
    }
  }

  /** Opens a session with the credentials now (or learns that the BMC has none); the proof of a password. */
  async login(): Promise<void> {
    if (this.#mode === "basic") {
      await this.get("/redfish/v1/SessionService");
      return;
    }
    await this.#openSession();
  }

  async #openSession(): Promise<void> {
    const path = "/redfish/v1/SessionService/Sessions";
    const { username, password } = this.#o.credentials;
    const res = await this.#send("POST", path, JSON.stringify({ UserName: username, Password: password }), {});
    if ((res.status === 404 || res.status === 405) && this.#mode === "unknown") {
      this.#mode = "basic";
      await this.get("/redfish/v1/Systems"); // proves the basic credentials (the root answers without them)
      return;
    }
    if (res.status >= 300) throw statusError("POST", path, res.status, _json(res.body, "POST", path, true));
    const token = res.headers.get("x-auth-token");
    if (!token) throw new RedfishError("bmc-auth", `POST ${path} answered ${res.status} without an X-Auth-Token`);
    this.#token = token;
    const loc = res.headers.get("location");
    this.#sessionPath = loc ? checkPath(loc, "session Location", this.#base) : undefined;
    this.#mode = "session";
  }

  async #call(
    method: TransportRequest["method"],
    path: string,
    body?: unknown,
    extra: Record<string, string> = {},
  ): Promise<RedfishAnswer> {
    const p = checkPath(path, `${method} path`);
    if (this.#mode !== "basic" && this.#token === undefined) await this.#openSession();
    const text = body === undefined ? undefined : JSON.stringify(body);
    let res = await this.#send(method, p, text, { ...extra, ...this.#authHeader() });
    if (res.status === 401 && this.#mode === "session") {
      this.#token = undefined; // an expired session: one new one, then the answer stands
      await this.#openSession();
      res = await this.#send(method, p, text, { ...extra, ...this.#authHeader() });
    }
    return this.#answer(method, p, res);
  }

  #answer(method: string, p: string, res: TransportResponse): RedfishAnswer {
    const json = _json(res.body, method, p, res.status >= 400);
    if (res.status >= 400) throw statusError(method, p, res.status, json);
    const etag = res.headers.get("etag") ?? (typeof json["@odata.etag"] === "string" ? json["@odata.etag"] : undefined);
    const location = res.headers.get("location");
    const ra = Number(res.headers.get("retry-after"));
    return {
      status: res.status,
      body: json,
      ...(etag ? { etag } : {}),
      ...(location ? { location: checkPath(location, "Location", this.#base) } : {}),
      ...(Number.isFinite(ra) && ra > 0 ? { retryAfterS: ra } : {}),
    };
  }

  #authHeader(): Record<string, string> {
    if (this.#mode === "session" && this.#token) return { "X-Auth-Token": this.#token };
    const { username, password } = this.#o.credentials;
    const b = new TextEncoder().encode(`${username}:${password}`);
    return { Authorization: `Basic ${btoa(String.fromCharCode(...b))}` };
  }

  #send(
    method: TransportRequest["method"],
    path: string,
    body: string | undefined,
    headers: Record<string, string>,
  ): Promise<TransportResponse> {
    return this.#transport.request({
      method,
      url: new URL(path, this.#base),
      headers: {
        Accept: "application/json",
        "OData-Version": "4.0",
        ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: new TextEncoder().encode(body) } : {}),
      timeoutMs: this.#o.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxBytes: this.#o.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
      ...(this.#o.signal ? { signal: this.#o.signal } : {}),
    });
  }
}

/** The `@odata.id` of `v` (a link object), checked to be a path on the BMC. */
export function odataId(v: unknown, what: string): string {
  const id = typeof v === "object" && v !== null ? (v as RedfishResource)["@odata.id"] : undefined;
  if (typeof id !== "string") throw new RedfishError("bmc-bad-response", `${what} has no @odata.id`);
  return checkPath(id, what);
}

/** The `@odata.id` of `resource[key]` (a navigation property). */
export function link(resource: RedfishResource, key: string, where: string): string {
  return odataId(resource[key], `${where} ${key}`);
}

/**
 * A path the client may follow: under `/redfish/`, no `..` segment; an absolute URL only on `base` (the BMC itself),
 * reduced to its path.
 */
export function checkPath(ref: string, what: string, base?: URL): string {
  let path = ref;
  if (/^[a-z]+:/i.test(ref)) {
    let u: URL;
    try {
      u = new URL(ref);
    } catch (e) {
      throw new RedfishError("bmc-bad-response", `${what} ${JSON.stringify(ref.slice(0, 200))} is not a URL`, {}, {
        cause: e,
      });
    }
    if (!base || u.origin !== base.origin) {
      throw new RedfishError("bmc-bad-response", `${what} ${JSON.stringify(ref.slice(0, 200))} leaves the BMC`);
    }
    path = u.pathname + u.search;
  }
  if (
    !path.startsWith("/redfish/") || path.split(/[/?]/).includes("..") || /[\s\\#]/.test(path) || path.length > 1024
  ) {
    throw new RedfishError("bmc-bad-response", `${what} ${JSON.stringify(path.slice(0, 200))} is not a Redfish path`);
  }
  return path;
}

/**
 * A push URI the client may POST an image to: a path on the BMC itself (an absolute URL only on `base`), anywhere on
 * it, without `..` segments, whitespace or fragments. Looser than {@link checkPath} because `HttpPushUri` need not be
 * under `/redfish/`; the credentials go to the same BMC either way.
 */
export function checkPushPath(ref: string, base: URL): string {
  let path = ref;
  if (/^[a-z]+:/i.test(ref)) {
    let u: URL | undefined;
    try {
      u = new URL(ref);
    } catch (e) {
      throw new RedfishError("bmc-bad-response", `push URI ${JSON.stringify(ref.slice(0, 200))} is not a URL`, {}, {
        cause: e,
      });
    }
    if (u.origin !== base.origin) {
      throw new RedfishError("bmc-bad-response", `push URI ${JSON.stringify(ref.slice(0, 200))} leaves the BMC`);
    }
    path = u.pathname + u.search;
  }
  if (
    !path.startsWith("/") || path.startsWith("//") || path.split(/[/?]/).includes("..") || /[\s\\#]/.test(path) ||
    path.length > 1024
  ) {
    throw new RedfishError(
      "bmc-bad-response",
      `push URI ${JSON.stringify(path.slice(0, 200))} is not a path on the BMC`,
    );
  }
  return path;
}

function _json(bytes: Uint8Array, method: string, path: string, lenient: boolean): RedfishResource {
  if (bytes.length === 0) return {};
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    if (lenient) return {};
    throw new RedfishError("bmc-bad-response", `${method} ${path}: the answer is not JSON`, {}, { cause: e });
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    if (lenient) return {};
    throw new RedfishError("bmc-bad-response", `${method} ${path}: the answer is not a JSON object`);
  }
  return v as RedfishResource;
}

function _isLoopback(h: string): boolean {
  return h === "localhost" || h === "[::1]" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}
