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

/**
 * A kind's row: its classes read on first use, so importing the map does not define every kind's two message classes
 * (`lazy_types.ts`: the generated module defines a class when it is first read; issue 24).
 */
function _row<P, R>(payload: () => P, result: () => R): { readonly payload: P; readonly result: R } {
  return {
    get payload() {
      return payload();
    },
    get result() {
      return result();
    },
  };
}

/** The kinds table's kinds, each with its payload and result message classes. */
export const KIND_MESSAGES = {
  "inventory.refresh": _row(() => v1.InventoryRefreshPayload, () => v1.InventoryRefreshResult),
  "diag.nvml": _row(() => v1.DiagNvmlPayload, () => v1.DiagNvmlResult),
  "gpu.reset": _row(() => v1.GpuResetPayload, () => v1.GpuResetResult),
  "node.reboot": _row(() => v1.NodeRebootPayload, () => v1.NodeRebootResult),
  "bmc.query": _row(() => v1.BmcQueryPayload, () => v1.BmcQueryResult),
  "bmc.boot": _row(() => v1.BmcBootPayload, () => v1.BmcBootResult),
  "bmc.power": _row(() => v1.BmcPowerPayload, () => v1.BmcPowerResult),
  "bmc.firmware": _row(() => v1.BmcFirmwarePayload, () => v1.BmcFirmwareResult),
  "bmc.storage": _row(() => v1.BmcStoragePayload, () => v1.BmcStorageResult),
  "bmc.rotate": _row(() => v1.BmcRotatePayload, () => v1.BmcRotateResult),
  "site.httpProxy": _row(() => v1.SiteHttpProxyPayload, () => v1.SiteHttpProxyResult),
  "boot.prepareRamdisk": _row(() => v1.BootPrepareRamdiskPayload, () => v1.BootPrepareRamdiskResult),
  "boot.cleanUp": _row(() => v1.BootCleanUpPayload, () => v1.BootCleanUpResult),
  "boot.kexec": _row(() => v1.BootKexecPayload, () => v1.BootKexecResult),
  "disk.wipe": _row(() => v1.DiskWipePayload, () => v1.DiskWipeResult),
  "deploy.image": _row(() => v1.DeployImagePayload, () => v1.DeployImageResult),
  "diag.dcgm": _row(() => v1.DiagDcgmPayload, () => v1.DiagDcgmResult),
  "driver.invoke": _row(() => v1.DriverInvokePayload, () => v1.DriverInvokeResult),
  "logs.collect": _row(() => v1.LogsCollectPayload, () => v1.LogsCollectResult),
  "instance.snapshot": _row(() => v1.InstanceSnapshotPayload, () => v1.InstanceSnapshotResult),
  "instance.migrate": _row(() => v1.InstanceMigratePayload, () => v1.InstanceMigrateResult),
  "daemon.upgrade": _row(() => v1.DaemonUpgradePayload, () => v1.DaemonUpgradeResult),
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
