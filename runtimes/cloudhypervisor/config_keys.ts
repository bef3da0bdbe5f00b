/**
 * Which keys of a VMM configuration bcd lets through, in two places: reading `vm.json` back (every key bcd itself
 * writes, nothing that could name a file) and rebuilding a memory snapshot's `config.json` before its first start
 * (seed 000 §The runtimes, Restores: from the snapshot only CPU, memory and platform keys are kept, through these
 * allowlists; bcd supplies payload, disks, NICs, serial, console, rng and devices; `fs`, `pmem`, `vsock`, memory zones,
 * CPU affinity, a debug console and landlock rules are dropped).
 *
 * The key names are those of cloud-hypervisor's OpenAPI document (`CpusConfig`, `MemoryConfig`, `PlatformConfig`).
 * None of the kept keys holds a path.
 *
 * @module
 */

/** `CpusConfig` keys kept from a snapshot (not `affinity`: a restore keeps bcd's pinning, never the snapshot's). */
export const CPUS_KEYS: readonly string[] = [
  "boot_vcpus",
  "max_vcpus",
  "topology",
  "kvm_hyperv",
  "max_phys_bits",
  "nested",
  "features",
  "core_scheduling",
];

/** `MemoryConfig` keys kept from a snapshot (not `zones`, which name files and host nodes). */
export const MEMORY_KEYS: readonly string[] = [
  "size",
  "hotplug_size",
  "hotplugged_size",
  "mergeable",
  "hotplug_method",
  "shared",
  "hugepages",
  "hugepage_size",
  "prefault",
  "reserve",
  "thp",
];

/** `PlatformConfig` keys kept from a snapshot. */
export const PLATFORM_KEYS: readonly string[] = [
  "num_pci_segments",
  "iommu_segments",
  "iommu_address_width_bits",
  "system_serial_number",
  "serial_number",
  "system_uuid",
  "uuid",
  "oem_strings",
  "system_manufacturer",
  "system_product_name",
  "system_version",
  "system_family",
  "system_sku_number",
  "chassis_asset_tag",
  "tdx",
  "sev_snp",
  "iommufd",
  "vfio_p2p_dma",
];

/** The top-level `VmConfig` keys bcd writes (and so reads back from `vm.json`); anything else is refused. */
export const VM_CONFIG_KEYS: readonly string[] = [
  "cpus",
  "memory",
  "payload",
  "disks",
  "rng",
  "balloon",
  "serial",
  "console",
  "devices",
  "platform",
];

/** `obj` with only the `keys` (a plain copy; an absent or non-object value is `undefined`). */
export function pick(obj: unknown, keys: readonly string[]): Record<string, unknown> | undefined {
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) return undefined;
  const out: Record<string, unknown> = {};
  for (const k of keys) if (k in obj) out[k] = (obj as Record<string, unknown>)[k];
  return out;
}
