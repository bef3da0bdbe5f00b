/**
 * The site agent's Redfish kinds, ready for its wiring: `bmc.query`, `bmc.power`, `bmc.boot`, `bmc.rotate`,
 * `bmc.firmware` (SimpleUpdate), `bmc.storage` (volumes of a RAID controller) over the Redfish client, each recording
 * its BMC in `bmc-hosts.json` and taking its credentials from the SecretRequest broker.
 *
 * @module
 */
import type { KindHandler } from "../../../core/commands/handlers.ts";
import type { BmcPorts } from "../bmc_target.ts";
import { bmcBootHandler } from "./bmc_boot.ts";
import { bmcFirmwareHandler, type BmcFirmwareOptions } from "./bmc_firmware.ts";
import { bmcPowerHandler, type BmcPowerTiming } from "./bmc_power.ts";
import { bmcQueryHandler } from "./bmc_query.ts";
import { bmcRotateHandler } from "./bmc_rotate.ts";
import { bmcStorageHandler, type BmcStorageOptions } from "./bmc_storage.ts";

export { BOOT_DEVICES } from "./bmc_boot.ts";
export { RESET_TYPES } from "./bmc_power.ts";
export { queryBmc } from "./bmc_query.ts";

/** The kinds {@link bmcKindHandlers} registers. */
export const BMC_KINDS = ["bmc.boot", "bmc.firmware", "bmc.power", "bmc.query", "bmc.rotate", "bmc.storage"] as const;

/** The Redfish kinds' handlers. */
export function bmcKindHandlers(
  ports: BmcPorts & { power?: BmcPowerTiming; firmware?: BmcFirmwareOptions; storage?: BmcStorageOptions },
): KindHandler[] {
  return [
    bmcQueryHandler(ports),
    bmcPowerHandler(ports),
    bmcBootHandler(ports),
    bmcRotateHandler(ports),
    bmcFirmwareHandler(ports),
    bmcStorageHandler(ports),
  ];
}
