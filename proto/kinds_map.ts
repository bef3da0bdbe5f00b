/**
 * The request (`payload`) and result messages of every command kind of the seed's kinds table (000 §Kinds by lane),
 * and of bcd's own kinds beyond it (`BCD_KINDS` in `core/commands/kinds.ts`: `instance.migrate`).
 * A kind's messages are named for it: `inventory.refresh` -> `InventoryRefreshPayload` / `InventoryRefreshResult`.
 * `core/commands/kinds_map_test.ts` checks that this map covers exactly the kinds of `core/commands/kinds.ts`.
 *
 * `daemon.upgrade`, the one kind an upgrade-only session accepts, is named by the seed but absent from its kinds table;
 * bcd gives it a row (`core/commands/kinds.ts`), so its messages are in the map like the others.
 *
 * @module
 */

import { bcd, type google } from "./gen/bcd.js";
import { packAny, type PackedAny, unpackAny } from "./any.ts";
import type { Decoded, DecodeOptions, Props } from "./wire.ts";

const v1 = bcd.v1;

/** The kinds table's kinds, each with its payload and result message classes. */
export const KIND_MESSAGES = {
  "inventory.refresh": { payload: v1.InventoryRefreshPayload, result: v1.InventoryRefreshResult },
  "diag.nvml": { payload: v1.DiagNvmlPayload, result: v1.DiagNvmlResult },
  "gpu.reset": { payload: v1.GpuResetPayload, result: v1.GpuResetResult },
  "node.reboot": { payload: v1.NodeRebootPayload, result: v1.NodeRebootResult },
  "bmc.query": { payload: v1.BmcQueryPayload, result: v1.BmcQueryResult },
  "bmc.boot": { payload: v1.BmcBootPayload, result: v1.BmcBootResult },
  "bmc.power": { payload: v1.BmcPowerPayload, result: v1.BmcPowerResult },
  "bmc.firmware": { payload: v1.BmcFirmwarePayload, result: v1.BmcFirmwareResult },
  "bmc.storage": { payload: v1.BmcStoragePayload, result: v1.BmcStorageResult },
  "bmc.rotate": { payload: v1.BmcRotatePayload, result: v1.BmcRotateResult },
  "site.httpProxy": { payload: v1.SiteHttpProxyPayload, result: v1.SiteHttpProxyResult },
  "boot.prepareRamdisk": { payload: v1.BootPrepareRamdiskPayload, result: v1.BootPrepareRamdiskResult },
  "boot.cleanUp": { payload: v1.BootCleanUpPayload, result: v1.BootCleanUpResult },
  "boot.kexec": { payload: v1.BootKexecPayload, result: v1.BootKexecResult },
  "disk.wipe": { payload: v1.DiskWipePayload, result: v1.DiskWipeResult },
  "deploy.image": { payload: v1.DeployImagePayload, result: v1.DeployImageResult },
  "diag.dcgm": { payload: v1.DiagDcgmPayload, result: v1.DiagDcgmResult },
  "driver.invoke": { payload: v1.DriverInvokePayload, result: v1.DriverInvokeResult },
  "logs.collect": { payload: v1.LogsCollectPayload, result: v1.LogsCollectResult },
  "instance.snapshot": { payload: v1.InstanceSnapshotPayload, result: v1.InstanceSnapshotResult },
  "instance.migrate": { payload: v1.InstanceMigratePayload, result: v1.InstanceMigrateResult },
  "daemon.upgrade": { payload: v1.DaemonUpgradePayload, result: v1.DaemonUpgradeResult },
} as const;

/** Kinds the seed names outside its kinds table (none left: `daemon.upgrade` has its row, issue 16). */
export const EXTRA_KIND_MESSAGES = {} as const;

/** A kind of the kinds table. */
export type WireKind = keyof typeof KIND_MESSAGES;

/** The decoded payload of a kind. */
export type PayloadOf<K extends WireKind> = Decoded<(typeof KIND_MESSAGES)[K]["payload"]>;
/** The decoded result of a kind. */
export type ResultOf<K extends WireKind> = Decoded<(typeof KIND_MESSAGES)[K]["result"]>;
/** What packing a kind's payload accepts. */
export type PayloadInit<K extends WireKind> = Props<(typeof KIND_MESSAGES)[K]["payload"]>;
/** What packing a kind's result accepts. */
export type ResultInit<K extends WireKind> = Props<(typeof KIND_MESSAGES)[K]["result"]>;

/** Whether `kind` is a kind of the kinds table. */
export function isWireKind(kind: string): kind is WireKind {
  return Object.hasOwn(KIND_MESSAGES, kind);
}

/** Packs a kind's payload for CommandBody.payload. */
export function packPayload<K extends WireKind>(kind: K, payload: PayloadInit<K>): PackedAny {
  return packAny(KIND_MESSAGES[kind].payload as never, payload as never);
}

/** Packs a kind's result for CommandUpdate.result. */
export function packResult<K extends WireKind>(kind: K, result: ResultInit<K>): PackedAny {
  return packAny(KIND_MESSAGES[kind].result as never, result as never);
}

/**
 * Unpacks CommandBody.payload as `kind`'s payload message.
 *
 * @throws {WireDecodeError} `type-mismatch` for another message, or any decode reason (the caller fails the command
 *   `invalid-payload`).
 */
export function unpackPayload<K extends WireKind>(
  kind: K,
  any: google.protobuf.Any.$Properties | null | undefined,
  options?: DecodeOptions,
): PayloadOf<K> {
  return unpackAny(KIND_MESSAGES[kind].payload as never, any, options) as PayloadOf<K>;
}

/** Unpacks CommandUpdate.result as `kind`'s result message. */
export function unpackResult<K extends WireKind>(
  kind: K,
  any: google.protobuf.Any.$Properties | null | undefined,
  options?: DecodeOptions,
): ResultOf<K> {
  return unpackAny(KIND_MESSAGES[kind].result as never, any, options) as ResultOf<K>;
}
