/**
 * `bmc.firmware`'s HTTP push (Redfish `UpdateService`, DSP0266 "Multipart HTTP push updates" and the older
 * `HttpPushUri`): the site agent sends the image from its cache to the BMC, for BMCs that cannot or must not reach the
 * site's boot server (Ironic's model is the pull, SimpleUpdate; the push is what DMTF recommends since Redfish 2019.2).
 *
 * - `MultipartHttpPushUri` first: one `multipart/form-data` POST with an `UpdateParameters` part (JSON, `Targets`: the
 *   inventory entry; the apply time is left to the BMC, as with SimpleUpdate) and an `UpdateFile` part (the image).
 * - Else `HttpPushUri`: when the service has `HttpPushUriTargets`, they are PATCHed to the entry first (with
 *   `HttpPushUriTargetsBusy` true when the service has it, released afterwards; a busy service is `bmc-refused`), then
 *   the raw image is POSTed as `application/octet-stream`.
 * - The image is the cache's copy, re-hashed as it is opened (`FirmwareCache.open`) and hashed again as it streams;
 *   the last chunk is held back until that digest matches, so bytes that changed on disk never reach the BMC as a
 *   complete body (the connection is dropped short of its `Content-Length`).
 * - The answer: a 202 with a task monitor, or a Task in the body, is followed to its end (`RedfishClient.waitTask`);
 *   a plain 2xx means the BMC took the image.
 *
 * @module
 */
import type { Hash } from "node:crypto";
import type { Logger } from "../../../core/log/mod.ts";
import { CommandFailed } from "../../../core/commands/rejection.ts";
import type { RedfishClient, RedfishResource } from "../client.ts";
import { RedfishError } from "../errors.ts";
import type { StreamedBody } from "../transport.ts";
import { str } from "./_common.ts";

/** A cached image opened for a push: `size` bytes on `stream`; `close` frees it when the stream was not read out. */
export interface CachedImage {
  readonly size: number;
  readonly stream: ReadableStream<Uint8Array>;
  close(): void;
}

/** Where a BMC takes pushed images, or `undefined` when it takes none. */
export function pushUri(upd: RedfishResource): { uri: string; multipart: boolean } | undefined {
  const m = str(upd, "MultipartHttpPushUri");
  if (m) return { uri: m, multipart: true };
  const h = str(upd, "HttpPushUri");
  return h ? { uri: h, multipart: false } : undefined;
}

/** Options of {@link pushImage}. */
export interface PushOptions {
  readonly updPath: string;
  readonly upd: RedfishResource;
  readonly updEtag?: string;
  /** The inventory entry the image is for. */
  readonly entry: string;
  readonly sha256: string;
  readonly image: CachedImage;
  readonly pushWithinMs: number;
  readonly taskWithinMs: number;
  readonly pollMs: number;
  readonly log: Logger;
}

/** Pushes the image (see the module doc); answers how it went and the task's id (`""` without a task). */
export async function pushImage(
  c: RedfishClient,
  o: PushOptions,
): Promise<{ transfer: "MultipartHttpPushUri" | "HttpPushUri"; taskId: string }> {
  const at = pushUri(o.upd);
  if (!at) throw new RedfishError("bmc-refused", `${o.updPath} offers neither MultipartHttpPushUri nor HttpPushUri`);
  const stream = digestChecked(o.image.stream, o.sha256, `the cached image ${o.sha256}`);
  let reserved = false;
  try {
    let answer;
    if (at.multipart) {
      const m = multipartBody({ Targets: [o.entry] }, { size: o.image.size, stream }, `${o.sha256}.bin`);
      o.log.warn({ bmc: c.origin, push: at.uri, size: o.image.size, component: o.entry }, "firmware push starting");
      answer = await c.upload(at.uri, m.body, { contentType: m.contentType, timeoutMs: o.pushWithinMs });
    } else {
      reserved = await _setPushTargets(c, o);
      o.log.warn({ bmc: c.origin, push: at.uri, size: o.image.size, component: o.entry }, "firmware push starting");
      answer = await c.upload(at.uri, { size: o.image.size, stream }, {
        contentType: "application/octet-stream",
        timeoutMs: o.pushWithinMs,
      });
    }
    const transfer = at.multipart ? "MultipartHttpPushUri" as const : "HttpPushUri" as const;
    const task = answer.status === 202 && answer.location ? answer.location : _runningTask(answer.body);
    if (!task) return { transfer, taskId: str(answer.body, "Id") };
    const done = await c.waitTask(task, { timeoutMs: o.taskWithinMs, pollMs: o.pollMs });
    return { transfer, taskId: str(done.body, "Id") || task };
  } finally {
    o.image.close();
    if (reserved) await _releasePushTargets(c, o);
  }
}

/**
 * `src` passed through while its SHA-256 is computed, one chunk behind: the last chunk goes out only when the digest
 * is `sha256`; otherwise the stream errors `firmware-digest-mismatch` and the reader never gets the whole body.
 */
export function digestChecked(
  src: ReadableStream<Uint8Array>,
  sha256: string,
  what: string,
): ReadableStream<Uint8Array> {
  let h: Hash;
  let held: Uint8Array | undefined;
  return src.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      // node:crypto for its incremental hash, loaded before the first chunk, not at the agent's start (issue 24).
      async start() {
        h = (await import("node:crypto")).createHash("sha256");
      },
      transform(chunk, ctl) {
        h.update(chunk);
        if (held) ctl.enqueue(held);
        held = chunk;
      },
      flush(ctl) {
        const got = h.digest("hex");
        if (got !== sha256) {
          throw new CommandFailed(
            "firmware-digest-mismatch",
            `${what} read SHA-256 ${got} while it was sent, not ${sha256}; the push was cut short of its last bytes`,
          );
        }
        if (held) ctl.enqueue(held);
      },
    }),
  );
}

/** A `multipart/form-data` push body: `UpdateParameters` (JSON) and `UpdateFile` (the image), with its exact size. */
export function multipartBody(
  params: Record<string, unknown>,
  image: StreamedBody,
  filename: string,
): { body: StreamedBody; contentType: string } {
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(filename)) throw new RangeError(`file name ${JSON.stringify(filename)}`);
  const boundary = `bcd-${crypto.randomUUID().replaceAll("-", "")}`;
  const enc = new TextEncoder();
  const pre = enc.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="UpdateParameters"\r\n` +
      `Content-Type: application/json\r\n\r\n${JSON.stringify(params)}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="UpdateFile"; filename="${filename}"\r\n` +
      `Content-Type: application/octet-stream\r\n\r\n`,
  );
  const post = enc.encode(`\r\n--${boundary}--\r\n`);
  async function* parts(): AsyncGenerator<Uint8Array> {
    yield pre;
    yield* image.stream;
    yield post;
  }
  return {
    body: { size: pre.length + image.size + post.length, stream: ReadableStream.from(parts()) },
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

/** The task a push answered with in its body (a Task still running), if any. */
function _runningTask(body: RedfishResource): string | undefined {
  const id = body["@odata.id"];
  const state = str(body, "TaskState");
  return typeof id === "string" && state !== "" && state !== "Completed" ? id : undefined;
}

/** PATCHes `HttpPushUriTargets` (and reserves them) when the service has them; answers whether it reserved. */
async function _setPushTargets(c: RedfishClient, o: PushOptions): Promise<boolean> {
  if (!Array.isArray(o.upd.HttpPushUriTargets)) return false;
  const busy = o.upd.HttpPushUriTargetsBusy;
  if (busy === true) {
    throw new RedfishError("bmc-refused", `${o.updPath} HttpPushUriTargetsBusy: another client is pushing an image`);
  }
  const reserve = typeof busy === "boolean";
  await c.patch(
    o.updPath,
    { HttpPushUriTargets: [o.entry], ...(reserve ? { HttpPushUriTargetsBusy: true } : {}) },
    o.updEtag,
  );
  return reserve;
}

async function _releasePushTargets(c: RedfishClient, o: PushOptions): Promise<void> {
  try {
    await c.patch(o.updPath, { HttpPushUriTargetsBusy: false });
  } catch (e) {
    if (!(e instanceof RedfishError)) throw e;
    o.log.warn({ bmc: c.origin, err: e.message }, "HttpPushUriTargetsBusy could not be released");
  }
}
