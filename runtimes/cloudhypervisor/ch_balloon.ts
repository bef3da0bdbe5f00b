/**
 * The `cloud-hypervisor` runtime's balloon verbs (000 §Memory ballooning: "`cloud-hypervisor` with `vm.resize`'s
 * `desired_balloon` and `vm.info`'s balloon size"), meaning what the `InstanceRuntime` hooks mean on `libvirt-kvm`:
 * sizes are what the balloon LEAVES the guest (libvirt's `setmem` and `balloon.current`), while cloud-hypervisor's
 * `desired_balloon` and `BalloonConfig.size` are what it TAKES. So:
 *
 * - `setBalloon(id, bytes)` sends `desired_balloon = memory − bytes`, rounded down to whole 4 KiB pages (the device
 *   counts pages and drops a remainder: rounding the take down means the guest keeps at least `bytes`, at most
 *   3 KiB more);
 * - `readBalloon(id)` answers `vm.info`'s `memory_actual_size` (the memory less the balloon's `actual`, the pages the
 *   guest's driver has really given; `memory − config.balloon.size` when it is absent) and, as the guest's use, the
 *   VMM's anonymous memory (`vmm_memory.ts`, read by root through `ChHostPort.memory`, since the node reads nothing
 *   under `/sys`; cloud-hypervisor's balloon has no statistics queue), `null` without one.
 *
 * The checks run in `libvirt.setmem`'s order: a guest defined without a balloon device is {@link NoBalloon} from its
 * record before anything else (and a VMM that still answers `Missing virtio-balloon` maps to it too), a size that is
 * not whole KiB is a `RangeError`, one above the guest's memory `invalid-size`, a VM not running or paused
 * `not-running`; another refusal of the VMM is `vmm-refused`. Sizes go over `api.sock` from the node itself (as for
 * volumes); only the usage reading is root's (the helper's `ch.memory`, an instance id and nothing else).
 *
 * A memory restore keeps bcd's balloon ({@link ownBalloon}): the rebuilt `config.json` already carries bcd's
 * `BalloonConfig`, but cloud-hypervisor restores the device's target (`num_pages`) from the snapshot's saved device
 * state, so right after `vm.restore` bcd sets the target back to its own with `vm.resize`.
 *
 * @module
 */
import { NoBalloon } from "../../core/balloon/port.ts";
import type { BalloonReading } from "../../core/balloon/port.ts";
import { RuntimeRefused } from "../../core/converge/instances/runtime.ts";
import { type ChApiClient, ChApiError, ChTransportError } from "./api_client.ts";
import type { VmInfo } from "./api_types.ts";
import type { ChRecord } from "./vm_record.ts";

/** The balloon's unit: cloud-hypervisor's virtio-balloon counts 4 KiB pages. */
export const BALLOON_PAGE = 4096;

const _MISSING = /Missing virtio-balloon/;

function _noBalloon(id: string, r: ChRecord): void {
  if (!r.config.balloon) throw new NoBalloon(`${id}: the VM was defined without a balloon device`);
}

/** `vm.info` of a VM that runs (or is paused); `not-running` otherwise. */
async function _runningInfo(id: string, api: ChApiClient): Promise<VmInfo> {
  let info: VmInfo;
  try {
    info = await api.info();
  } catch (e) {
    if (
      (e instanceof ChApiError && e.notCreated) || (e instanceof ChTransportError && e.reason === "vmm-unreachable")
    ) {
      throw new RuntimeRefused("not-running", `${id}: the VM is not running`, { cause: e });
    }
    throw e;
  }
  if (info.state !== "Running" && info.state !== "Paused") {
    throw new RuntimeRefused("not-running", `${id}: the VM is ${info.state}`);
  }
  return info;
}

/** The balloon of instance `id` (record `r`), read through its API, with `memory` its VMM's memory use. */
export async function readChBalloon(
  id: string,
  r: ChRecord,
  api: ChApiClient,
  memory: () => Promise<number | null>,
): Promise<BalloonReading> {
  _noBalloon(id, r);
  const info = await _runningInfo(id, api);
  const b = info.config.balloon;
  if (!b) throw new NoBalloon(`${id}: the VMM reports no balloon device`);
  const size = info.config.memory?.size ?? r.memoryBytes;
  const current = info.memory_actual_size ?? size - b.size;
  if (!Number.isSafeInteger(current) || current < 0 || current > size) {
    throw new RuntimeRefused("vmm-refused", `${id}: vm.info reports ${current} bytes of ${size} left to the guest`);
  }
  const used = await memory();
  return { currentBytes: current, usedBytes: used === null ? null : Math.min(used, size) };
}

/** Leaves instance `id` (record `r`) `bytes` of its memory (whole KiB), through `vm.resize`'s `desired_balloon`. */
export async function setChBalloon(id: string, r: ChRecord, api: ChApiClient, bytes: number): Promise<void> {
  _noBalloon(id, r);
  if (!Number.isSafeInteger(bytes) || bytes < 1024 || bytes % 1024 !== 0) {
    throw new RangeError(`${id}: balloon size ${bytes} is not a whole number of KiB`);
  }
  if (bytes > r.memoryBytes) {
    throw new RuntimeRefused(
      "invalid-size",
      `${id}: balloon size ${bytes} is more than the guest's ${r.memoryBytes} bytes of memory`,
    );
  }
  await _runningInfo(id, api);
  await _resize(id, api, Math.floor((r.memoryBytes - bytes) / BALLOON_PAGE) * BALLOON_PAGE);
}

/**
 * After a memory restore: the balloon's target back to bcd's (its record's `BalloonConfig.size`), whatever target the
 * snapshot's device state carried. Nothing for a VM defined without a balloon.
 */
export async function ownBalloon(id: string, r: ChRecord, api: ChApiClient): Promise<void> {
  if (!r.config.balloon) return;
  await _resize(id, api, r.config.balloon.size);
}

async function _resize(id: string, api: ChApiClient, desired: number): Promise<void> {
  try {
    await api.resize({ desired_balloon: desired });
  } catch (e) {
    if (e instanceof ChApiError && e.messages.some((m) => _MISSING.test(m))) {
      throw new NoBalloon(`${id}: ${e.message}`, { cause: e });
    }
    if (e instanceof ChApiError) throw new RuntimeRefused("vmm-refused", `${id}: ${e.message}`, { cause: e });
    throw e;
  }
}
