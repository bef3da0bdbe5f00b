/**
 * `inventory.refresh` (control lane, retry-safe): the host's inventory (CPUs, memory, NUMA nodes, disks, NICs) from a
 * {@link HostInventoryReader} (runtimes/host reads /proc and /sys), plus the GPUs from the devices' `GpuTool` when the
 * build has one, reported as `InventoryRefreshResult`.
 *
 * @module
 */
import { packResult, type Props, unpackPayload, WireDecodeError } from "../../../proto/mod.ts";
import type { bcd } from "../../../proto/mod.ts";
import type { GpuInventory } from "../../converge/devices/inventory.ts";
import { NoGpuDriver } from "../../converge/devices/ports.ts";
import type { HandlerContext, HandlerResult, KindHandler } from "../handlers.ts";
import { InvalidPayload } from "../rejection.ts";

/** The wire inventory. */
export type Inventory = Props<typeof bcd.v1.Inventory>;

/** The host part of the inventory (everything but the GPUs and the driver version). */
export type HostInventory = Omit<Inventory, "gpus" | "gpu_driver_version">;

/** Reads the host's inventory. */
export interface HostInventoryReader {
  read(): Promise<HostInventory>;
}

/** Where the GPUs come from: the devices' GPU tool (`nvidia-smi` on a host, fake hardware in sim). */
export interface GpuInventorySource {
  query(): Promise<GpuInventory>;
}

/** Maps the devices' GPU inventory to the wire's `GpuInfo`s; health only when asked for. */
export function gpusToWire(inv: GpuInventory, includeHealth: boolean): Inventory["gpus"] {
  return inv.gpus.map((g) => ({
    uuid: g.uuid,
    name: g.productName ?? "",
    pci_bus_id: g.pciBusId,
    numa_node: g.numaNode ?? -1,
    mig_enabled: g.migMode === "Enabled",
    mig_instances: g.migInstances.map((m) => ({
      uuid: m.uuid ?? "",
      gpu_instance: m.gi,
      compute_instance: m.ci,
      profile: m.profile ?? "",
    })),
    ...(includeHealth && g.eccVolatileUncorrectable !== undefined
      ? { ecc: { enabled: true, volatile_uncorrectable: g.eccVolatileUncorrectable } }
      : {}),
    ...(includeHealth && g.remap !== undefined ? { remap: { pending: g.remap.pending, failed: g.remap.failed } } : {}),
  }));
}

/** The `inventory.refresh` handler. */
export function inventoryRefreshHandler(ports: { host: HostInventoryReader; gpus?: GpuInventorySource }): KindHandler {
  return {
    kind: "inventory.refresh",
    resources(command) {
      _payload(command.payload);
      return [];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const includeHealth = _payload(ctx.command.payload).include_health;
      const host = await ports.host.read();
      let gpus: Inventory["gpus"] = [];
      let driver = "";
      let note: string | undefined;
      if (ports.gpus !== undefined) {
        try {
          const inv = await ports.gpus.query();
          gpus = gpusToWire(inv, includeHealth);
          driver = inv.driverVersion ?? "";
        } catch (e) {
          // A CPU-only host answers with no GPUs and says why; any other failure of the tool fails the command.
          if (!(e instanceof NoGpuDriver)) throw e;
          note = `no GPUs: ${e.message}`;
          ctx.logger.info({ reason: e.reason }, note);
        }
      }
      const any = packResult("inventory.refresh", { inventory: { ...host, gpus, gpu_driver_version: driver } });
      return { result: { typeUrl: any.type_url, value: any.value }, ...(note ? { message: note } : {}) };
    },
  };
}

function _payload(p: { typeUrl: string; value: Uint8Array } | undefined) {
  if (p === undefined) return { include_health: false };
  try {
    return unpackPayload("inventory.refresh", { type_url: p.typeUrl, value: p.value });
  } catch (e) {
    if (e instanceof WireDecodeError) throw new InvalidPayload(e.message, { cause: e });
    throw e;
  }
}
