/**
 * Hot-unplug on `cloud-hypervisor`, as the VMM does it (`vmm/src/device_manager.rs`): `vm.remove-device` takes the
 * device out of the VM's configuration at once and asks the guest (ACPI) to eject it; only the guest's eject
 * (`eject_device`) takes it out of the device tree and closes the file behind it. So a removal the VMM accepted is
 * not a removal yet: the device is gone when `vm.info`'s `device_tree` no longer has it. Until then it is
 * `detach-pending`, as `libvirt-kvm` reports a disk the guest still holds ({@link DetachPending}).
 *
 * @module
 */
import { type ChApiClient, ChApiError } from "./api_client.ts";
import type { VmInfo } from "./api_types.ts";

/** Where a device stands: in the configuration, in the device tree (the guest still has it), or gone. */
export function deviceIn(info: VmInfo, id: string): { config: boolean; tree: boolean } {
  const c = info.config;
  const config = [...(c.disks ?? []), ...(c.net ?? []), ...(c.devices ?? [])].some((d) => d.id === id);
  return { config, tree: info.device_tree !== undefined && Object.hasOwn(info.device_tree, id) };
}

/**
 * Asks the VMM to remove device `id` (again, while the guest has not ejected it: the request is repeated, as
 * `libvirt-kvm` repeats its `detach-device`) and answers `released` once the device tree no longer has it, `pending`
 * while the guest holds it. A device that is nowhere is `released` without a request.
 */
export async function unplugDevice(api: ChApiClient, id: string): Promise<"released" | "pending"> {
  const was = deviceIn(await api.info(), id);
  if (!was.config && !was.tree) return "released";
  try {
    await api.removeDevice(id);
  } catch (e) {
    // The guest may have ejected it between the look and the request: gone is what was asked for.
    if (!(e instanceof ChApiError)) throw e;
    const now = deviceIn(await api.info(), id);
    if (now.config || now.tree) throw e;
    return "released";
  }
  return deviceIn(await api.info(), id).tree ? "pending" : "released";
}
