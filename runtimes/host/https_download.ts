/**
 * One https download into a new file, for base images and snapshots: https only, a redirect followed only to https (at
 * most 5), the bytes hashed with SHA-256 while they stream, a size bound, and — when a {@link TransferClock} is given —
 * the transfer rules of 000 §Instances: a 2-minute window moving less than 1 MiB, or 6 hours in all, ends it
 * (`download-stalled`, `download-timeout`). A failure is {@link DownloadRefused} with its reason; the caller removes
 * the partial file.
 *
 * @module
 */
import { TRANSFER_LIMITS, type TransferClock, type TransferLimits } from "./https_put.ts";
import { repeat } from "../../core/clock.ts";

/** A download that failed or was refused; `reason`: `not-https`, `download-failed`, `too-large`, `download-stalled`, `download-timeout`. */
export class DownloadRefused extends Error {
  override name = "DownloadRefused";
  constructor(readonly reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** Options of {@link httpsDownload}. */
export interface DownloadOptions {
  readonly fetch: typeof fetch;
  readonly maxBytes: number;
  /** What the log and errors call the thing (`image`, `snapshot`). */
  readonly what: string;
  /** With a clock, the stall window and the cap apply. */
  readonly clock?: TransferClock;
  readonly limits?: Partial<TransferLimits>;
}

const MAX_REDIRECTS = 5;

/** Streams `url` into `dest` (created new, 0600, once the server answers 200) and returns the bytes' SHA-256. */
export async function httpsDownload(url: string, dest: string, o: DownloadOptions): Promise<string> {
  let f: Deno.FsFile | undefined;
  try {
    return await httpsStream(url, {
      async write(chunk) {
        f ??= await Deno.open(dest, { write: true, createNew: true, mode: 0o600 });
        for (let off = 0; off < chunk.length;) off += await f.write(chunk.subarray(off));
      },
      async end() {
        f ??= await Deno.open(dest, { write: true, createNew: true, mode: 0o600 });
        await f.sync();
      },
    }, o);
  } finally {
    f?.close();
  }
}

/** Where a stream's bytes go, in order; `end` once the last has been written. */
export interface ByteSink {
  write(chunk: Uint8Array): Promise<void>;
  end(): Promise<void>;
}

/**
 * Streams `url` into `sink` under the same rules as {@link httpsDownload} (https only, redirects only to https, the
 * size bound, the transfer rules with a clock) and returns the bytes' SHA-256, hashed as they pass. A failure of the
 * sink is its own error, not a {@link DownloadRefused}.
 */
export async function httpsStream(url: string, sink: ByteSink, o: DownloadOptions): Promise<string> {
  const limits = { ...TRANSFER_LIMITS, ...o.limits };
  const abort = new AbortController();
  let failure: DownloadRefused | undefined;
  let moved = 0;
  let last = 0;
  const fail = (e: DownloadRefused) => {
    failure ??= e;
    abort.abort(e);
  };
  const watch = o.clock && repeat(o.clock, limits.stallWindowMs, () => {
    if (moved - last < limits.stallMinBytes) {
      fail(
        new DownloadRefused(
          "download-stalled",
          `${o.what} ${url}: ${
            moved - last
          } bytes moved in ${limits.stallWindowMs} ms (at least ${limits.stallMinBytes} required)`,
        ),
      );
    }
    last = moved;
  });
  const cap = o.clock?.setTimer(
    limits.capMs,
    () => fail(new DownloadRefused("download-timeout", `${o.what} ${url}: the transfer passed ${limits.capMs} ms`)),
  );
  try {
    return await _download(url, sink, o, abort.signal, (n) => moved += n);
  } catch (e) {
    if (failure !== undefined) throw failure;
    throw e;
  } finally {
    watch?.cancel();
    cap?.cancel();
  }
}

async function _download(
  url: string,
  sink: ByteSink,
  o: DownloadOptions,
  signal: AbortSignal,
  progress: (n: number) => void,
): Promise<string> {
  let at = url;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    if (!at.startsWith("https://")) {
      throw new DownloadRefused("not-https", `${o.what} URL ${JSON.stringify(at)} is not https`);
    }
    let res: Response;
    try {
      res = await o.fetch(at, { redirect: "manual", signal });
    } catch (e) {
      if (e instanceof TypeError || (e instanceof DOMException && e.name === "AbortError")) {
        throw new DownloadRefused("download-failed", `${o.what} ${at}: ${e.message}`, { cause: e });
      }
      throw e;
    }
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel();
      const next = res.headers.get("location");
      if (!next) throw new DownloadRefused("download-failed", `${o.what} ${at}: redirect without a location`);
      at = new URL(next, at).href;
      continue;
    }
    if (res.status !== 200 || !res.body) {
      await res.body?.cancel();
      throw new DownloadRefused("download-failed", `${o.what} ${at}: HTTP ${res.status}`);
    }
    // node:crypto for its incremental hash, loaded here, not at the agent's start (issue 24).
    const { createHash } = await import("node:crypto");
    const hash = createHash("sha256");
    let n = 0;
    try {
      for await (const chunk of res.body) {
        n += chunk.length;
        progress(chunk.length);
        if (n > o.maxBytes) {
          await res.body.cancel().catch((e) => {
            if (!(e instanceof TypeError)) throw e;
          });
          throw new DownloadRefused("too-large", `${o.what} ${at} passes ${o.maxBytes} bytes`);
        }
        hash.update(chunk);
        await sink.write(chunk);
      }
      await sink.end();
    } catch (e) {
      if (e instanceof DownloadRefused) throw e;
      if (e instanceof TypeError || (e instanceof DOMException && e.name === "AbortError")) {
        throw new DownloadRefused("download-failed", `${o.what} ${at}: ${e.message}`, { cause: e });
      }
      throw e;
    }
    return hash.digest("hex");
  }
  throw new DownloadRefused("download-failed", `${o.what} ${url}: more than ${MAX_REDIRECTS} redirects`);
}
