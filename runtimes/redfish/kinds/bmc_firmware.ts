/**
 * `bmc.firmware` (control lane, destructive, 1 h): a firmware update through Redfish `UpdateService`, the image pulled
 * by the BMC (`SimpleUpdate`, Ironic's way) or pushed to it by the site agent (`MultipartHttpPushUri`/`HttpPushUri`).
 *
 * 1. The image is checked before the BMC hears of it. With the site's image cache, `image_url` (https) is downloaded
 *    into the cache (hashed as it streams, kept only under its digest). Without one the image is only hashed (plain
 *    http allowed on loopback, for tests) and only SimpleUpdate is possible. Either way a SHA-256 that is not the
 *    payload's fails `firmware-digest-mismatch` before the BMC is asked.
 * 2. The component is found in `UpdateService.FirmwareInventory`: `BMC` or `BIOS`, or an inventory id, matched against
 *    each entry's `Id` (case-insensitive) — `firmware-component-missing` otherwise; its `Version` is the previous one.
 * 3. The transfer (`transfer`): UNSPECIFIED takes SimpleUpdate when the service offers it, else the push when it offers
 *    one and the cache holds the image; SIMPLE_UPDATE or HTTP_PUSH only that one (a service without it: `bmc-refused`;
 *    HTTP_PUSH without the cache: `firmware-push-unavailable`).
 *    - SimpleUpdate is POSTed with `ImageURI` — the boot server's copy, `<boot url>/images/sha256/<hex>`, re-verified
 *      before it is served, when the site has a boot server (`[site] boot_listen`), else `image_url` — plus
 *      `TransferProtocol` and `Targets` (the inventory entry). A 202 is followed through its task monitor.
 *    - The push (`_firmware_push.ts`) sends the cache's copy, re-hashed as it is opened and again as it streams.
 *    Tasks are waited for up to `taskWithinMs` (default 55 min, inside the kind's hour; the push's upload has
 *    `pushWithinMs`, default 30 min, of it); a task that ends badly fails `bmc-error` with its messages.
 * 4. The version is read back; the result says the transfer, the task and whether the version moved (a BMC that stages
 *    the image until its next reset reports the old one: the message says so, the command still succeeds).
 *
 * Peers: DMTF's `public-rackmount1` offers SimpleUpdate and the legacy `HttpPushUri` (`/FWUpdate`, outside
 * `/redfish/`, no `HttpPushUriTargets`, no multipart); its server parses every POST body as JSON, so a pushed image is
 * read in full (its `Content-Length` honoured; it answers 411 without one) and refused 400 — `test:site` shows that.
 * sushy-tools advertises `HttpPushUri` but serves no POST there. The fake BMC takes both pushes (`fixtures/redfish/`).
 *
 * @module
 */
import type { HandlerContext, HandlerResult, KindHandler } from "../../../core/commands/handlers.ts";
import { payloadOf, resultOf } from "../../../core/commands/kind_payload.ts";
import { CommandFailed, InvalidPayload } from "../../../core/commands/rejection.ts";
import { bcd } from "../../../proto/mod.ts";
import { link, odataId, type RedfishClient } from "../client.ts";
import { bmcLock, type BmcPorts, checkTarget, openBmc } from "../bmc_target.ts";
import { RedfishError } from "../errors.ts";
import { actionTarget, str } from "./_common.ts";
import { type CachedImage, pushImage, pushUri } from "./_firmware_push.ts";

const Transfer = bcd.v1.BmcFirmwarePayload.Transfer;

/** Options of `bmc.firmware`. */
export interface BmcFirmwareOptions {
  /** Extra CAs for the image download (tests); the system roots otherwise. */
  readonly imageCaCerts?: readonly string[];
  readonly taskWithinMs?: number;
  /** The bound of a push's upload (default 30 min). */
  readonly pushWithinMs?: number;
  readonly pollMs?: number;
  /** The largest image hashed (default 4 GiB). */
  readonly maxImageBytes?: number;
  /** The site's image cache and the URL its boot server serves a digest at: the image is offered from there. */
  readonly cache?: FirmwareCache;
}

/** The image cache as `bmc.firmware` uses it (`runtimes/site/firmware_cache.ts`). */
export interface FirmwareCache {
  /**
   * Downloads the image into the cache unless held; a failure is a CommandFailed: `firmware-digest-mismatch` (nothing
   * kept) or `firmware-download-failed`.
   */
  warm(url: URL, sha256: string): Promise<void>;
  /** The URL the site's boot server serves the digest at, or `undefined` without a boot server. */
  servedAt(sha256: string): URL | undefined;
  /** The stored image re-hashed and opened, or `undefined` when it is gone or no longer matches (then removed). */
  open(sha256: string): Promise<CachedImage | undefined>;
}

export type { CachedImage };

/** The `bmc.firmware` handler. */
export function bmcFirmwareHandler(ports: BmcPorts & { firmware?: BmcFirmwareOptions }): KindHandler {
  return {
    kind: "bmc.firmware",
    resources(command) {
      const p = payloadOf("bmc.firmware", command);
      _check(p);
      return [bmcLock(checkTarget(p.target))];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const p = payloadOf("bmc.firmware", ctx.command);
      const url = _check(p);
      const t = checkTarget(p.target);
      const sha = p.sha256.toLowerCase();
      const cache = ports.firmware?.cache;
      const want = p.transfer ?? Transfer.TRANSFER_UNSPECIFIED;
      if (want === Transfer.HTTP_PUSH && !cache) {
        throw new CommandFailed(
          "firmware-push-unavailable",
          "an HTTP push sends the image from the site's image cache, and this agent has none",
        );
      }
      if (cache) await cache.warm(url, sha);
      else await _verifyImage(url, sha, ports.firmware, ctx.signal);
      ctx.logger.info({ image: url.href, sha256: sha }, "firmware image digest verified");
      const c = await openBmc(ports, t, "bmc.firmware", ctx.command.id, ctx.signal);
      try {
        const root = await c.get("/redfish/v1/");
        const updPath = link(root.body, "UpdateService", "/redfish/v1/");
        const updAnswer = await c.get(updPath);
        const upd = updAnswer.body;
        const simple = actionTarget(upd, "#UpdateService.SimpleUpdate");
        const push = cache !== undefined && pushUri(upd) !== undefined;
        const viaPush = want === Transfer.HTTP_PUSH || (want !== Transfer.SIMPLE_UPDATE && !simple && push);
        if (!viaPush && !simple) {
          const pushToo = want === Transfer.TRANSFER_UNSPECIFIED ? (cache ? " nor an HTTP push URI" : "") : "";
          throw new RedfishError("bmc-refused", `${updPath} offers no SimpleUpdate${pushToo}`);
        }
        const { entry, previous } = await _entry(c, link(upd, "FirmwareInventory", updPath), p.component);
        const within = {
          taskWithinMs: ports.firmware?.taskWithinMs ?? 55 * 60_000,
          pollMs: ports.firmware?.pollMs ?? 5000,
        };
        let transfer: string;
        let taskId = "";
        if (viaPush) {
          const image = await cache!.open(sha);
          if (!image) {
            throw new CommandFailed(
              "firmware-digest-mismatch",
              `the cached image ${sha} no longer matches its digest (removed); nothing was pushed`,
            );
          }
          ({ transfer, taskId } = await pushImage(c, {
            updPath,
            upd,
            ...(updAnswer.etag ? { updEtag: updAnswer.etag } : {}),
            entry,
            sha256: sha,
            image,
            pushWithinMs: ports.firmware?.pushWithinMs ?? 30 * 60_000,
            ...within,
            log: ctx.logger,
          }));
        } else {
          const offered = cache?.servedAt(sha) ?? url;
          ctx.logger.warn(
            { bmc: c.origin, component: entry, image: offered.href, previous },
            "firmware update starting",
          );
          const started = await c.post(simple!, {
            ImageURI: offered.href,
            TransferProtocol: offered.protocol === "https:" ? "HTTPS" : "HTTP",
            Targets: [entry],
          });
          if (started.status === 202 && started.location) {
            const done = await c.waitTask(started.location, { timeoutMs: within.taskWithinMs, pollMs: within.pollMs });
            taskId = str(done.body, "Id") || started.location;
          }
          transfer = "SimpleUpdate";
        }
        const version = str((await c.get(entry)).body, "Version");
        const moved = version !== previous;
        return {
          result: resultOf("bmc.firmware", {
            previous_version: previous,
            version,
            task_id: taskId,
            transfer,
            message: moved
              ? `${p.component} went from ${previous} to ${version} (${transfer})`
              : `the BMC accepted the update (${transfer}); ${p.component} still reads ${version} (applied at its next reset?)`,
          }),
        };
      } finally {
        await c.close();
      }
    },
  };
}

/** The inventory entry of `component` and its version now; `firmware-component-missing` when there is none. */
async function _entry(
  c: RedfishClient,
  inventory: string,
  component: string,
): Promise<{ entry: string; previous: string }> {
  for (const m of (await c.members(inventory)).slice(0, 64)) {
    const b = (await c.get(m)).body;
    if (str(b, "Id").toLowerCase() === component.toLowerCase()) {
      return { entry: odataId(b, m), previous: str(b, "Version") };
    }
  }
  throw new CommandFailed("firmware-component-missing", `${inventory} has no ${component}`);
}

function _check(p: { image_url: string; sha256: string; component: string }): URL {
  let u: URL;
  try {
    u = new URL(p.image_url);
  } catch (e) {
    throw new InvalidPayload(`image_url ${JSON.stringify(p.image_url.slice(0, 200))} is not a URL`, { cause: e });
  }
  const loopback = /^127\.\d+\.\d+\.\d+$|^\[::1\]$|^localhost$/.test(u.hostname);
  if (u.protocol !== "https:" && !(u.protocol === "http:" && loopback)) {
    throw new InvalidPayload(`image_url must be https (plain http only on loopback), not ${u.protocol}`);
  }
  if (u.username || u.password) throw new InvalidPayload("image_url carries credentials");
  if (!/^[0-9a-fA-F]{64}$/.test(p.sha256)) throw new InvalidPayload("sha256 is not 64 hex digits");
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(p.component)) throw new InvalidPayload(`component ${JSON.stringify(p.component)}`);
  return u;
}

async function _verifyImage(url: URL, want: string, o: BmcFirmwareOptions | undefined, signal: AbortSignal) {
  const client = o?.imageCaCerts ? Deno.createHttpClient({ caCerts: [...o.imageCaCerts] }) : undefined;
  const max = o?.maxImageBytes ?? 4 * 1024 ** 3;
  try {
    let res: Response;
    try {
      res = await fetch(url, { redirect: "error", signal, ...(client ? { client } : {}) });
    } catch (e) {
      if (e instanceof TypeError) {
        throw new CommandFailed("firmware-download-failed", `${url.href}: ${e.message}`, { cause: e });
      }
      throw e;
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      throw new CommandFailed("firmware-download-failed", `${url.href} answered ${res.status}`);
    }
    // node:crypto for its incremental hash, loaded here, not at the agent's start (issue 24).
    const { createHash } = await import("node:crypto");
    const h = createHash("sha256");
    let n = 0;
    for await (const chunk of res.body) {
      n += chunk.length;
      if (n > max) throw new CommandFailed("firmware-download-failed", `${url.href} is over ${max} bytes`);
      h.update(chunk);
    }
    const got = h.digest("hex");
    if (got !== want) {
      throw new CommandFailed(
        "firmware-digest-mismatch",
        `${url.href} has SHA-256 ${got}, not ${want}; the BMC was not asked`,
      );
    }
  } finally {
    client?.close();
  }
}
