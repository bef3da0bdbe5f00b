/**
 * `bmc.query` (control lane, retry-safe, 2 min): reads the system a target names and answers its power state, make,
 * model, serial, BIOS version, health (`Status.Health`), the boot override in effect (`None` when the override is
 * `Disabled`), the MAC addresses of its `EthernetInterfaces` (at most 32 interfaces, each MAC once) and the firmware version of the manager that
 * manages it (`Links.ManagedBy[0]`). Nothing is changed on the BMC.
 *
 * @module
 */
import type { HandlerContext, HandlerResult, KindHandler } from "../../../core/commands/handlers.ts";
import { link, odataId, type RedfishClient } from "../client.ts";
import { bmcLock, type BmcPorts, checkTarget, openBmc } from "../bmc_target.ts";
import { obj, str } from "./_common.ts";
import { payloadOf, resultOf } from "../../../core/commands/kind_payload.ts";

const MAX_NICS = 32;

/** The `bmc.query` handler. */
export function bmcQueryHandler(ports: BmcPorts): KindHandler {
  return {
    kind: "bmc.query",
    resources: (command) => [bmcLock(checkTarget(payloadOf("bmc.query", command).target))],
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const t = checkTarget(payloadOf("bmc.query", ctx.command).target);
      const c = await openBmc(ports, t, "bmc.query", ctx.command.id, ctx.signal);
      try {
        return { result: resultOf("bmc.query", await queryBmc(c, t.systemId)) };
      } finally {
        await c.close();
      }
    },
  };
}

/** What `bmc.query` answers, read through `c`. */
export async function queryBmc(c: RedfishClient, systemId: string) {
  const path = await c.systemPath(systemId);
  const sys = (await c.get(path)).body;
  const boot = obj(sys, "Boot");
  const enabled = str(boot, "BootSourceOverrideEnabled");
  const macs: string[] = [];
  if (obj(sys, "EthernetInterfaces")) {
    for (const nic of (await c.members(link(sys, "EthernetInterfaces", path))).slice(0, MAX_NICS)) {
      const mac = str((await c.get(nic)).body, "MACAddress");
      if (mac && !macs.includes(mac.toLowerCase())) macs.push(mac.toLowerCase());
    }
  }
  const managedBy = obj(sys, "Links")?.ManagedBy;
  let bmcFirmware = "";
  if (Array.isArray(managedBy) && managedBy.length > 0) {
    bmcFirmware = str((await c.get(odataId(managedBy[0], `${path} Links.ManagedBy`))).body, "FirmwareVersion");
  }
  return {
    power_state: str(sys, "PowerState"),
    manufacturer: str(sys, "Manufacturer"),
    model: str(sys, "Model"),
    serial: str(sys, "SerialNumber"),
    bios_version: str(sys, "BiosVersion"),
    bmc_firmware_version: bmcFirmware,
    health: str(obj(sys, "Status"), "Health"),
    nic_macs: macs,
    boot_override: enabled === "Disabled" ? "None" : str(boot, "BootSourceOverrideTarget") || "None",
  };
}
