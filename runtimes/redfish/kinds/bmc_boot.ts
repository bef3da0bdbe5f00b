/**
 * `bmc.boot` (control lane, retry-safe, destructive, 2 min): what a machine boots next.
 *
 * 1. Virtual media, when asked: the system's CD/DVD virtual drive (from the system's `VirtualMedia`, else its
 *    manager's, as older BMCs and sushy-tools' do; the first member whose `MediaTypes` has `CD` or `DVD`) gets the
 *    image: one already holding another image is ejected first, then `VirtualMedia.InsertMedia` with `Image`,
 *    `Inserted` and `WriteProtected` (a PATCH of `Image` on a BMC without the action); `eject_virtual_media` sends
 *    `VirtualMedia.EjectMedia`. The image is read back (`Image`, `Inserted`).
 * 2. The override, when `device` is set: a PATCH of the system's `Boot` with `BootSourceOverrideTarget`,
 *    `BootSourceOverrideEnabled` (`Once`, or `Continuous` when `persistent`), `BootSourceOverrideMode: UEFI` when
 *    `uefi`, and `HttpBootUri` for `UefiHttp`, carrying the system's ETag in `If-Match`; `None` disables the override.
 *    The target is read back (`bmc-boot-unverified` when it differs). `BootSourceOverrideEnabled` is not verified:
 *    some BMCs (sushy-tools over libvirt among them) keep every override continuous and say so.
 *
 * Running it again sets the same state (retry-safe). A device outside the system's `AllowableValues` fails
 * `bmc-refused` before anything changes.
 *
 * @module
 */
import type { HandlerContext, HandlerResult, KindHandler } from "../../../core/commands/handlers.ts";
import { CommandFailed, InvalidPayload } from "../../../core/commands/rejection.ts";
import { link, type RedfishClient, type RedfishResource } from "../client.ts";
import { bmcLock, type BmcPorts, checkTarget, openBmc } from "../bmc_target.ts";
import { RedfishError } from "../errors.ts";
import { actionTarget, obj, str } from "./_common.ts";
import { payloadOf, resultOf } from "../../../core/commands/kind_payload.ts";

/** The boot devices `bmc.boot` takes (Redfish `BootSourceOverrideTarget`). */
export const BOOT_DEVICES = ["Pxe", "Hdd", "Cd", "UefiHttp", "BiosSetup", "None"] as const;

/** The `bmc.boot` handler. */
export function bmcBootHandler(ports: BmcPorts): KindHandler {
  return {
    kind: "bmc.boot",
    resources(command) {
      const p = payloadOf("bmc.boot", command);
      _check(p);
      return [bmcLock(checkTarget(p.target))];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const p = payloadOf("bmc.boot", ctx.command);
      _check(p);
      const t = checkTarget(p.target);
      const c = await openBmc(ports, t, "bmc.boot", ctx.command.id, ctx.signal);
      try {
        const path = await c.systemPath(t.systemId);
        let media = "";
        if (p.virtual_media_url !== "" || p.eject_virtual_media) {
          media = await _virtualMedia(c, path, p.eject_virtual_media ? "" : p.virtual_media_url);
          ctx.logger.info({ bmc: c.origin, system: path, image: media || null }, "bmc virtual media");
        }
        if (p.device !== "") {
          const sys = await c.get(path);
          const allowed = obj(sys.body, "Boot")?.["BootSourceOverrideTarget@Redfish.AllowableValues"];
          if (Array.isArray(allowed) && p.device !== "None" && !allowed.includes(p.device)) {
            throw new RedfishError("bmc-refused", `${path} does not allow boot device ${p.device}`);
          }
          const boot: RedfishResource = p.device === "None"
            ? { BootSourceOverrideTarget: "None", BootSourceOverrideEnabled: "Disabled" }
            : {
              BootSourceOverrideTarget: p.device,
              BootSourceOverrideEnabled: p.persistent ? "Continuous" : "Once",
              ...(p.uefi ? { BootSourceOverrideMode: "UEFI" } : {}),
              ...(p.device === "UefiHttp" && p.http_boot_uri ? { HttpBootUri: p.http_boot_uri } : {}),
            };
          await c.patch(path, { Boot: boot }, sys.etag);
          const back = obj((await c.get(path)).body, "Boot");
          const got = str(back, "BootSourceOverrideTarget") || "None";
          const on = str(back, "BootSourceOverrideEnabled");
          const effective = p.device === "None" ? (on === "Disabled" ? "None" : got) : got;
          if (effective !== p.device) {
            throw new CommandFailed(
              "bmc-boot-unverified",
              `${path} reads boot override ${JSON.stringify(got)} (${on || "?"}) after it was set to ${p.device}`,
            );
          }
          ctx.logger.info({ bmc: c.origin, system: path, device: p.device, persistent: p.persistent }, "bmc boot set");
        }
        return {
          result: resultOf("bmc.boot", { device: p.device, persistent: p.persistent, virtual_media_url: media }),
        };
      } finally {
        await c.close();
      }
    },
  };
}

function _check(p: { device: string; virtual_media_url: string; eject_virtual_media: boolean; http_boot_uri: string }) {
  if (p.device !== "" && !(BOOT_DEVICES as readonly string[]).includes(p.device)) {
    throw new InvalidPayload(`device ${JSON.stringify(p.device)} is not one of ${BOOT_DEVICES.join(", ")}`);
  }
  if (p.device === "" && p.virtual_media_url === "" && !p.eject_virtual_media) {
    throw new InvalidPayload("bmc.boot names no device and no virtual media");
  }
  if (p.virtual_media_url !== "" && p.eject_virtual_media) {
    throw new InvalidPayload("virtual_media_url and eject_virtual_media are exclusive");
  }
  for (const [field, v] of [["virtual_media_url", p.virtual_media_url], ["http_boot_uri", p.http_boot_uri]]) {
    if (v === "") continue;
    let u: URL | undefined;
    try {
      u = new URL(v!);
    } catch {
      u = undefined;
    }
    if (!u || (u.protocol !== "https:" && u.protocol !== "http:") || u.username || u.password) {
      throw new InvalidPayload(`${field} ${JSON.stringify(v)} is not an http(s) URL without credentials`);
    }
  }
}

/** Inserts `image` into the CD/DVD virtual drive (or ejects it for `""`); returns the image read back. */
async function _virtualMedia(c: RedfishClient, system: string, image: string): Promise<string> {
  const drive = await _cdDrive(c, system);
  let cur = await c.get(drive);
  const inserted = cur.body.Inserted === true || (str(cur.body, "Image") !== "" && cur.body.Inserted !== false);
  const eject = actionTarget(cur.body, "#VirtualMedia.EjectMedia");
  if (inserted && str(cur.body, "Image") !== image) {
    if (eject) await c.post(eject, {});
    else await c.patch(drive, { Image: null, Inserted: false }, cur.etag);
    cur = await c.get(drive);
  }
  if (image !== "" && str(cur.body, "Image") !== image) {
    const insert = actionTarget(cur.body, "#VirtualMedia.InsertMedia");
    if (insert) await c.post(insert, { Image: image, Inserted: true, WriteProtected: true });
    else await c.patch(drive, { Image: image, Inserted: true, WriteProtected: true }, cur.etag);
  }
  const back = (await c.get(drive)).body;
  const now = back.Inserted === false ? "" : str(back, "Image");
  if (now !== image) {
    throw new CommandFailed(
      "bmc-boot-unverified",
      `${drive} reads image ${JSON.stringify(now)} (Inserted ${String(back.Inserted)}) after ${
        image ? `inserting ${image}` : "ejecting"
      }`,
    );
  }
  return now;
}

async function _cdDrive(c: RedfishClient, system: string): Promise<string> {
  const sys = (await c.get(system)).body;
  let collection: string | undefined;
  if (obj(sys, "VirtualMedia")) collection = link(sys, "VirtualMedia", system);
  else {
    const managedBy = obj(sys, "Links")?.ManagedBy;
    if (Array.isArray(managedBy) && managedBy.length > 0) {
      const mgrPath = (managedBy[0] as RedfishResource)["@odata.id"];
      if (typeof mgrPath === "string") {
        const mgr = (await c.get(mgrPath)).body;
        if (obj(mgr, "VirtualMedia")) collection = link(mgr, "VirtualMedia", mgrPath);
      }
    }
  }
  if (!collection) throw new RedfishError("bmc-refused", `${system} has no virtual media`);
  for (const m of await c.members(collection)) {
    const types = (await c.get(m)).body.MediaTypes;
    if (Array.isArray(types) && (types.includes("CD") || types.includes("DVD"))) return m;
  }
  throw new RedfishError("bmc-refused", `${collection} has no CD or DVD drive`);
}
