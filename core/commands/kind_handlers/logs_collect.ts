/**
 * `logs.collect` (bulk lane, retry-safe): the daemon's recent logs and a journal summary as a `.tar.gz`, uploaded with
 * HTTP PUT to the presigned https URL of the payload through an {@link Uploader}, which keeps the transfer rules of
 * 000 §Instances (https only, redirects only to https, a 2-minute window moving less than 1 MiB stalls, 6 hours in
 * all); runtimes/host implements it. Result: `LogsCollectResult` (bytes uploaded, SHA-256, sources included,
 * truncated).
 *
 * Sources: each registered {@link LogSource} by name (`daemon`, `journal`); an empty `sources` list takes them all, and
 * a requested source this build lacks is skipped (the result's `included` says what went in).
 *
 * @module
 */
import { packResult, unpackPayload, WireDecodeError } from "../../../proto/mod.ts";
import { sha256, toHex } from "../../pki/ed25519.ts";
import type { HandlerContext, HandlerResult, KindHandler } from "../handlers.ts";
import { CommandFailed, InvalidPayload } from "../rejection.ts";
import { timestampMs } from "../wire.ts";
import { type Clock, realClock } from "../../clock.ts";
import { type TarEntry, tarGz } from "./tar_gz.ts";

/** The archive's default and largest bound. */
export const DEFAULT_LOGS_MAX_BYTES = 64 * 1024 * 1024;
export const MAX_LOGS_MAX_BYTES = 256 * 1024 * 1024;

/** One thing the archive can hold. */
export interface LogSource {
  /** The name a payload's `sources` uses. */
  readonly name: string;
  /** The file name inside the archive. */
  readonly file: string;
  /** The content since `sinceMs` (0: everything kept), at most `maxBytes`. */
  collect(sinceMs: number, maxBytes: number): Promise<{ data: Uint8Array; truncated: boolean }>;
}

/** A refused or failed upload; `code` becomes the command's error code. */
export class UploadError extends Error {
  override name = "UploadError";
  constructor(
    readonly code: "upload-refused" | "upload-stalled" | "upload-timeout" | "upload-failed",
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** PUTs bytes to a presigned URL under the transfer rules; rejects with {@link UploadError}. */
export interface Uploader {
  put(url: string, body: Uint8Array, opts: { contentType: string; signal?: AbortSignal }): Promise<void>;
}

/** Checks an upload URL before anything is collected: https only. */
export function checkUploadUrl(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch (e) {
    throw new InvalidPayload(`upload_url ${JSON.stringify(raw)} is not a URL`, { cause: e });
  }
  if (u.protocol !== "https:") throw new InvalidPayload(`upload_url must be https, got ${u.protocol}`);
  return u;
}

/** The `logs.collect` handler. */
export function logsCollectHandler(ports: {
  sources: readonly LogSource[];
  uploader: Uploader;
  /** Stamps the archive's entries (default the real clock). */
  clock?: Pick<Clock, "now">;
}): KindHandler {
  const clock = ports.clock ?? realClock;
  return {
    kind: "logs.collect",
    resources(command) {
      checkUploadUrl(_payload(command.payload).upload_url);
      return [];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const p = _payload(ctx.command.payload);
      const url = checkUploadUrl(p.upload_url);
      let budget = p.max_bytes > 0 ? Math.min(p.max_bytes, MAX_LOGS_MAX_BYTES) : DEFAULT_LOGS_MAX_BYTES;
      const since = timestampMs(p.since) ?? 0;
      const wanted = p.sources.length === 0 ? ports.sources : ports.sources.filter((s) => p.sources.includes(s.name));
      const entries: TarEntry[] = [];
      const included: string[] = [];
      let truncated = false;
      for (const s of wanted) {
        if (ctx.signal.aborted) throw new CommandFailed("cancelled", "cancelled before the upload");
        const got = await s.collect(since, budget);
        budget -= got.data.length;
        truncated ||= got.truncated;
        entries.push({ name: s.file, data: got.data, mtimeMs: clock.now() });
        included.push(s.name);
      }
      const archive = await tarGz(entries);
      try {
        await ports.uploader.put(url.href, archive, { contentType: "application/gzip", signal: ctx.signal });
      } catch (e) {
        if (e instanceof UploadError) throw new CommandFailed(e.code, e.message, { cause: e });
        throw e;
      }
      const any = packResult("logs.collect", {
        uploaded_bytes: archive.length,
        sha256: toHex(await sha256(archive)),
        included,
        truncated,
      });
      return { result: { typeUrl: any.type_url, value: any.value } };
    },
  };
}

function _payload(p: { typeUrl: string; value: Uint8Array } | undefined) {
  if (p === undefined) throw new InvalidPayload("logs.collect needs a payload with upload_url");
  try {
    return unpackPayload("logs.collect", { type_url: p.typeUrl, value: p.value });
  } catch (e) {
    if (e instanceof WireDecodeError) throw new InvalidPayload(e.message, { cause: e });
    throw e;
  }
}
