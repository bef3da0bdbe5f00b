/**
 * `bmc.firmware` (control lane, destructive, 1 h): a firmware update through Redfish `UpdateService.SimpleUpdate`.
 *
 * 1. The image is checked before the BMC hears of it, and the BMC pulls it from the site, not from the origin: with
 *    the site's image cache and boot server (`[site] boot_listen`), `image_url` (https) is downloaded into the cache
 *    (hashed as it streams, kept only under its digest) and the BMC is offered the cache's copy,
 *    `<boot url>/images/sha256/<hex>`, which the boot server re-verifies before it serves it. Without a boot server
 *    the image is only hashed (plain http allowed on loopback, for tests) and the BMC pulls `image_url` itself. Either
 *    way a SHA-256 that is not the payload's fails `firmware-digest-mismatch` before the BMC is asked.
 * 2. The component is found in `UpdateService.FirmwareInventory`: `BMC` or `BIOS`, or an inventory id, matched against
 *    each entry's `Id` (case-insensitive) — `firmware-component-missing` otherwise; its `Version` is the previous one.
 * 3. `SimpleUpdate` is POSTed with `ImageURI`, `TransferProtocol` and `Targets` (the inventory entry). A 202 is
 *    followed through its task monitor (`RedfishClient.waitTask`, up to `taskWithinMs`, default 55 min, inside the
 *    kind's hour); a task that ends badly fails `bmc-error` with its messages.
 * 4. The version is read back; the result says the task and whether the version moved (a BMC that stages the image
 *    until its next reset reports the old one: the message says so, the command still succeeds).
 *
 * HttpPush (multipart upload of the image from the site cache) waits for the cache (issue 18).
 *
 * @module
 */
import { createHash } from "node:crypto";
import type { HandlerContext, HandlerResult, KindHandler } from "../../../core/commands/handlers.ts";
import { payloadOf, resultOf } from "../../../core/commands/kind_payload.ts";
import { CommandFailed, InvalidPayload } from "../../../core/commands/rejection.ts";
import { link, odataId } from "../client.ts";
import { bmcLock, type BmcPorts, checkTarget, openBmc } from "../bmc_target.ts";
import { RedfishError } from "../errors.ts";
import { actionTarget, str } from "./_common.ts";

/** Options of `bmc.firmware`. */
export interface BmcFirmwareOptions {
  /** Extra CAs for the image download (tests); the system roots otherwise. */
  readonly imageCaCerts?: readonly string[];
  readonly taskWithinMs?: number;
  readonly pollMs?: number;
  /** The largest image hashed (default 4 GiB). */
  readonly maxImageBytes?: number;
  /** The site's image cache and the URL its boot server serves a digest at: the image is offered from there. */
  readonly cache?: FirmwareCache;
}

/** The image cache as `bmc.firmware` uses it (`runtimes/site/firmware_cache.ts`). */
export interface FirmwareCache {
  /**
   * Downloads the image into the cache unless held and answers the URL the boot server serves it at; a failure is a
   * CommandFailed: `firmware-digest-mismatch` (nothing kept) or `firmware-download-failed`.
   */
  offer(url: URL, sha256: string): Promise<URL>;
}

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
      const offered = ports.firmware?.cache
        ? await ports.firmware.cache.offer(url, p.sha256.toLowerCase())
        : (await _verifyImage(url, p.sha256.toLowerCase(), ports.firmware, ctx.signal), url);
      ctx.logger.info({ image: url.href, offered: offered.href, sha256: p.sha256 }, "firmware image digest verified");
      const c = await openBmc(ports, t, "bmc.firmware", ctx.command.id, ctx.signal);
      try {
        const root = await c.get("/redfish/v1/");
        const updPath = link(root.body, "UpdateService", "/redfish/v1/");
        const upd = (await c.get(updPath)).body;
        const action = actionTarget(upd, "#UpdateService.SimpleUpdate");
        if (!action) throw new RedfishError("bmc-refused", `${updPath} offers no SimpleUpdate`);
        const inventory = link(upd, "FirmwareInventory", updPath);
        let entry: string | undefined;
        let previous = "";
        for (const m of (await c.members(inventory)).slice(0, 64)) {
          const b = (await c.get(m)).body;
          if (str(b, "Id").toLowerCase() === p.component.toLowerCase()) {
            entry = odataId(b, m);
            previous = str(b, "Version");
            break;
          }
        }
        if (!entry) throw new CommandFailed("firmware-component-missing", `${inventory} has no ${p.component}`);
        ctx.logger.warn({ bmc: c.origin, component: entry, image: offered.href, previous }, "firmware update starting");
        const started = await c.post(action, {
          ImageURI: offered.href,
          TransferProtocol: offered.protocol === "https:" ? "HTTPS" : "HTTP",
          Targets: [entry],
        });
        let taskId = "";
        if (started.status === 202 && started.location) {
          const done = await c.waitTask(started.location, {
            timeoutMs: ports.firmware?.taskWithinMs ?? 55 * 60_000,
            pollMs: ports.firmware?.pollMs ?? 5000,
          });
          taskId = str(done.body, "Id") || started.location;
        }
        const version = str((await c.get(entry)).body, "Version");
        const moved = version !== previous;
        return {
          result: resultOf("bmc.firmware", {
            previous_version: previous,
            version,
            task_id: taskId,
            message: moved
              ? `${p.component} went from ${previous} to ${version}`
              : `the BMC accepted the update; ${p.component} still reads ${version} (applied at its next reset?)`,
          }),
        };
      } finally {
        await c.close();
      }
    },
  };
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
