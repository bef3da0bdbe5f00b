/**
 * Reads `nvidia-smi -q -x` (the v12 DTD, `nvsmi_device_v12.dtd`, and the v11 ECC layout before it) into the GPU
 * inventory: UUID, PCI bus id, minor number, product, MIG mode and MIG devices (GPU and compute instance ids; their
 * `MIG-…` UUIDs are not in this output and come from `nvidia-smi -L`, see {@link ./smi_list.ts}), volatile
 * uncorrectable ECC errors and row remapping. `N/A` values stay absent, never 0.
 *
 * @module
 */
import type { GpuInfo, GpuInventory, MigInstance, MigMode } from "../../core/converge/devices/inventory.ts";
import { child, childrenNamed, parseXml, textAt, type XmlElement } from "./xml.ts";

/** At most this many GPUs in one document (an HGX board has 8; a GB200 NVL rack tray 4). */
export const MAX_GPUS = 64;
/** At most this many MIG devices per GPU (seven GPU instances with up to eight compute instances each). */
export const MAX_MIG_DEVICES = 64;

/** Output nvidia-smi should not have written. */
export class SmiOutputError extends Error {
  override name = "SmiOutputError";
}

function _int(s: string | undefined): number | undefined {
  if (s === undefined || !/^\d{1,12}$/.test(s)) return undefined;
  return Number(s);
}

function _migMode(s: string | undefined): MigMode {
  return s === "Enabled" ? "Enabled" : s === "Disabled" ? "Disabled" : "N/A";
}

/** A number with a unit (`31 C`, `71.37 W`), or `undefined` for N/A. */
function _measure(s: string | undefined, unit: string): number | undefined {
  const m = s === undefined ? null : new RegExp(`^(\\d{1,6}(?:\\.\\d{1,4})?) ${unit}$`).exec(s);
  return m ? Number(m[1]) : undefined;
}

function _recovery(s: string | undefined): string | undefined {
  return s && s !== "N/A" && /^[A-Za-z0-9 _-]{1,40}$/.test(s) ? s : undefined;
}

function _yesNo(s: string | undefined): boolean | undefined {
  return s === "Yes" ? true : s === "No" ? false : undefined;
}

/** Sums the volatile uncorrectable counters, whichever layout the driver wrote; `undefined` when all are N/A. */
function _volatileUncorrectable(gpu: XmlElement): number | undefined {
  const vol = child(child(gpu, "ecc_errors"), "volatile");
  if (!vol) return undefined;
  let sum: number | undefined;
  const add = (v: string | undefined) => {
    const n = _int(v);
    if (n !== undefined) sum = (sum ?? 0) + n;
  };
  // v12: sram_uncorrectable_parity, sram_uncorrectable_secded, dram_uncorrectable (older v12: sram_uncorrectable).
  for (const c of vol.children) if (/uncorrectable/.test(c.name)) add(c.text.trim());
  // v11: volatile/double_bit/total.
  add(textAt(vol, "double_bit/total"));
  return sum;
}

function _mig(gpu: XmlElement, uuid: string): MigInstance[] {
  const devs = childrenNamed(child(gpu, "mig_devices"), "mig_device");
  if (devs.length > MAX_MIG_DEVICES) throw new SmiOutputError(`${uuid} lists ${devs.length} MIG devices`);
  return devs.map((d) => {
    const gi = _int(textAt(d, "gpu_instance_id"));
    const ci = _int(textAt(d, "compute_instance_id"));
    const index = _int(textAt(d, "index"));
    if (gi === undefined || ci === undefined || index === undefined) {
      throw new SmiOutputError(`${uuid}: a MIG device without numeric index, gpu_instance_id and compute_instance_id`);
    }
    return { gi, ci, index };
  });
}

function _gpu(el: XmlElement): GpuInfo {
  const uuid = textAt(el, "uuid");
  if (!uuid || !/^GPU-[A-Za-z0-9-]{1,64}$/.test(uuid)) throw new SmiOutputError(`GPU without a usable <uuid>: ${uuid}`);
  const pciBusId = textAt(el, "pci/pci_bus_id") ?? el.attrs["id"];
  if (!pciBusId || !/^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$/.test(pciBusId)) {
    throw new SmiOutputError(`${uuid}: no usable PCI bus id (${pciBusId})`);
  }
  const pending = _yesNo(textAt(el, "remapped_rows/remapped_row_pending"));
  const failed = _yesNo(textAt(el, "remapped_rows/remapped_row_failure"));
  const migPending = textAt(el, "mig_mode/pending_mig");
  return {
    uuid,
    pciBusId,
    minorNumber: _int(textAt(el, "minor_number")),
    productName: textAt(el, "product_name"),
    migMode: _migMode(textAt(el, "mig_mode/current_mig")),
    ...(migPending !== undefined ? { migPending: _migMode(migPending) } : {}),
    migInstances: _mig(el, uuid),
    eccVolatileUncorrectable: _volatileUncorrectable(el),
    remap: pending === undefined && failed === undefined ? undefined : { pending: !!pending, failed: !!failed },
    resetRequired: _yesNo(textAt(el, "gpu_reset_status/reset_required")),
    recoveryAction: _recovery(textAt(el, "gpu_recovery_action")),
    temperatureC: _measure(textAt(el, "temperature/gpu_temp"), "C"),
    // v13 (driver 570 on): gpu_power_readings/instant_power_draw (power_draw is gone; average_power_draw beside it);
    // v12 since driver 535: gpu_power_readings/power_draw; before it: power_readings/power_draw.
    powerW: _measure(
      textAt(el, "gpu_power_readings/instant_power_draw") ?? textAt(el, "gpu_power_readings/power_draw") ??
        textAt(el, "power_readings/power_draw"),
      "W",
    ),
  };
}

/** Parses `nvidia-smi -q -x`. Throws `XmlRefused` for a refused document and {@link SmiOutputError} for a bad one. */
export function parseSmiXml(text: string): GpuInventory {
  const root = parseXml(text);
  if (root.name !== "nvidia_smi_log") throw new SmiOutputError(`root element <${root.name}>, not <nvidia_smi_log>`);
  const gpus = childrenNamed(root, "gpu");
  if (gpus.length > MAX_GPUS) throw new SmiOutputError(`${gpus.length} GPUs exceed ${MAX_GPUS}`);
  const parsed = gpus.map(_gpu);
  const seen = new Set<string>();
  for (const g of parsed) {
    if (seen.has(g.uuid)) throw new SmiOutputError(`GPU ${g.uuid} listed twice`);
    seen.add(g.uuid);
  }
  return { driverVersion: textAt(root, "driver_version"), cudaVersion: textAt(root, "cuda_version"), gpus: parsed };
}
