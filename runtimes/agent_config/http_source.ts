/**
 * The control plane as a {@link ConfigSource} over HTTP (the testbed's `/v1/agent-config`, see
 * `fixtures/testbed/agent_config_store.ts`): `GET <url>?if_version=V`; 200 carries the bundle and its version in
 * `x-bcd-config-version`, 204 the version alone. The body is bounded before it is held: a `content-length` beyond the
 * wire cap is refused unread, and the stream is counted as it arrives.
 *
 * @module
 */
import { ConfigDeliveryError, type ConfigSource, type FetchedBundle } from "../../core/agent_config/mod.ts";
import { MAX_WIRE_BYTES } from "../../core/images/mod.ts";

/** The header that carries the version. */
export const CONFIG_VERSION_HEADER = "x-bcd-config-version";
const VERSION = /^[A-Za-z0-9_-]{0,128}$/;

/** Options of {@link HttpConfigSource}. */
export interface HttpConfigSourceOptions {
  /** The fetch endpoint, e.g. `https://cp.example/v1/agent-config`. */
  readonly url: string;
  readonly maxWireBytes?: number;
  readonly fetch?: typeof fetch;
}

/** Fetches bundles by version over HTTP. */
export class HttpConfigSource implements ConfigSource {
  readonly #o: HttpConfigSourceOptions;
  constructor(opts: HttpConfigSourceOptions) {
    this.#o = opts;
  }

  async fetch(ifVersion: string): Promise<FetchedBundle> {
    const u = new URL(this.#o.url);
    u.searchParams.set("if_version", ifVersion);
    const res = await (this.#o.fetch ?? fetch)(u);
    const version = res.headers.get(CONFIG_VERSION_HEADER);
    if ((res.status !== 200 && res.status !== 204) || version === null || !VERSION.test(version)) {
      await res.body?.cancel();
      throw new ConfigDeliveryError(
        "fetch-failed",
        `GET ${u.pathname} answered ${res.status} with version ${JSON.stringify(version?.slice(0, 80))}`,
      );
    }
    if (res.status === 204) return { version, tarball: null };
    return { version, tarball: await this.#bounded(res) };
  }

  /** Watches `<url>/watch?after=V` for the next version (the ConfigVersion publish signal); "" when aborted. */
  async watch(after: string, signal: AbortSignal): Promise<string> {
    const u = new URL(this.#o.url.replace(/\/?$/, "/watch"));
    u.searchParams.set("after", after);
    let res: Response;
    try {
      res = await (this.#o.fetch ?? fetch)(u, { signal });
    } catch (e) {
      if (signal.aborted) return "";
      throw new ConfigDeliveryError("fetch-failed", `watching agent config: ${e}`, { cause: e });
    }
    await res.body?.cancel();
    return res.headers.get(CONFIG_VERSION_HEADER) ?? "";
  }

  async #bounded(res: Response): Promise<Uint8Array> {
    const cap = this.#o.maxWireBytes ?? MAX_WIRE_BYTES;
    const declared = Number(res.headers.get("content-length") ?? "0");
    if (declared > cap) {
      await res.body?.cancel();
      throw new ConfigDeliveryError("bundle-unsafe", `the bundle declares ${declared} bytes, beyond ${cap}`);
    }
    const parts: Uint8Array[] = [];
    let n = 0;
    for await (const chunk of res.body ?? new ReadableStream<Uint8Array>()) {
      n += chunk.length;
      if (n > cap) {
        await res.body?.cancel().catch(() => {});
        throw new ConfigDeliveryError("bundle-unsafe", `the bundle holds more than ${cap} bytes`);
      }
      parts.push(chunk);
    }
    const out = new Uint8Array(n);
    let o = 0;
    for (const p of parts) {
      out.set(p, o);
      o += p.length;
    }
    return out;
  }
}
