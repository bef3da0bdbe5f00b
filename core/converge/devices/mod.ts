/**
 * GPU holds: the `devices` section's converger (000 §Device assignments) and the GPU command kinds `gpu.reset` and
 * `diag.nvml`. Everything here is pure logic over small ports ({@link ./ports.ts}): the CDI/env hold store, the
 * slice manager, the GPU tool, the host memory source and the event sink. `runtimes/cdi`, `runtimes/cgroup` and
 * `runtimes/nvidia` implement them; {@link ./fakes.ts} has in-memory ones.
 *
 * Wiring: {@link DevicesConverger} is a `SectionConverger` as is; its `plan` takes the decoded `bcd.v1.DevicesSection`
 * the engine holds ({@link devicesSectionFromWire} maps it). Events go to an {@link EventSink} that signs
 * (`AllocationBound`/`AllocationReleased` with the node key) and journals them. `gpu.reset` and `diag.nvml` register
 * through {@link gpuResetHandler} and {@link diagNvmlHandler}.
 *
 * Seed readings (000 §Device assignments), where the seed leaves a choice:
 * - `bcd.dev/device-id` carries the atom id (`<GPU UUID>/gi<N>/ci<M>`), the id the CDI name lost its `/` from; the
 *   MIG UUID the driver knows goes in `NVIDIA_VISIBLE_DEVICES`. Each CDI device has the GPU's `/dev/nvidia<minor>`
 *   as its device node (CDI refuses a device without edits), none when the minor is unknown.
 * - The allocation id comes from the spec's file name; ids are 1–128 of `[A-Za-z0-9_.-]` (else
 *   `invalid-assignment`, bcd's own reason, as are malformed env lines, cpulists and an allocation listed twice).
 * - A GPU passed through to a VM fails a hold with `overlap`, naming the instance.
 * - Conflict order: holds already bound keep their atoms; new holds are checked in spec order.
 * - A hold already bound whose GPU leaves the inventory stays bound (bcd never drops a hold on its own).
 * - `AllocationFailed` is journaled once per allocation, reason and generation; a retryable action failure keeps the
 *   section `PROGRESSING` even beside a terminal failure, so the next pass runs.
 * - "The daemon never drops an assignment on its own" extends to its events: the journal records, in the transaction
 *   that journals each `AllocationBound`/`AllocationReleased`, which allocations stand announced bound
 *   (`Journal.announcedAllocations`, wired as the converger's `announced`). A hold on disk that the journal never
 *   announced (a crash between the write and the event) is announced `AllocationBound` on the next pass; one announced
 *   but gone is announced `AllocationReleased`. A journal from before this record (or a new journal) announces every
 *   held hold once more: a repeated `AllocationBound` is harmless, a lost one is not.
 * - A host without a huge page size (e.g. no 1 GiB pages: no `/sys/kernel/mm/hugepages/hugepages-1048576kB`, so the
 *   kernel offers no `hugetlb.1GB.max` to write) cannot honor a hold that books that size: it fails terminally with
 *   `resources-exhausted` (so the control plane re-places it), its message naming the size, before anything is
 *   written. The sizes come with the host's memory (`HostMemory.hugePageSizes`, through the helper on the node);
 *   when the host's memory could not be read, the kernel's missing `hugetlb.<size>.max` is found at the slice write
 *   ({@link PageSizeUnsupported}, the helper's `unsupported`) and fails the new hold the same way. A hold already
 *   bound whose slice must be made again keeps retrying (bcd never drops a hold on its own).
 * - Admission: a hold's huge pages are checked per size against free less reserved pages host-wide and, when it names
 *   `mems`, the free pages on those nodes, less what bound holds booked and have not faulted in.
 *
 * @module
 */
export {
  type AssignedDevice,
  type AssignmentLimits,
  type BindingName,
  DEVICE_CAPABILITIES,
  type DeviceAssignment,
  type DevicesSection,
  hasSliceLimits,
  type HoldBinding,
  holdBinding,
  isValidAllocationId,
  isValidCpuList,
  parseCpuList,
} from "./assignment.ts";
export {
  type Admission,
  admitHold,
  type BoundCommitment,
  boundHoldsCommittedBytes,
  HOST_HEADROOM_BYTES,
  type HostMemory,
  type HugePagePool,
  missingHugePageSize,
  needsAdmission,
  pageSizeName,
  parseMeminfo,
} from "./admission.ts";
export {
  applyDevices,
  type DevicesApplyPorts,
  type DevicesApplyResult,
  DevicesMemory,
  type DevicesOutcome,
} from "./apply.ts";
export {
  cdiDeviceName,
  classOfAtom,
  DEVICE_CLASSES,
  type DeviceClass,
  isDeviceClass,
  parseAtom,
  type ParsedAtom,
  type ResolvedDevice,
  resolveDevice,
} from "./classes.ts";
export { type Claim, conflictingClaim, describeConflict, type PassthroughGpu, selfConflict } from "./conflicts.ts";
export { type DevicesContext, DevicesConverger, type DevicesConvergerOptions, dirExists } from "./converger.ts";
export {
  diagFromInventory,
  diagNvml,
  type DiagNvmlResult,
  type GpuDiagnosis,
  xidsFromConditions,
  type XidSource,
} from "./diag_nvml.ts";
export { ENV_LINE, holdEnv, type HoldEnvInput, MPS_PIPE_DIRECTORY, RESERVED_ENV_KEYS } from "./env.ts";
export { type AllocationBound, type AllocationFailed, type AllocationReleased, type DeviceEvent } from "./events.ts";
export { diagDcgmHandler, diagNvmlHandler, gpuResetHandler } from "./gpu_kind_handlers.ts";
export {
  checkDiagDcgmPayload,
  DcgmKindError,
  type DcgmLevel,
  type DcgmRun,
  type DcgmTestResult,
  type DcgmTool,
  diagDcgm,
  type DiagDcgmPorts,
  type DiagDcgmResult,
  MAX_DCGM_JSON,
  parseDcgmDiag,
} from "./diag_dcgm.ts";
export {
  checkGpuResetPayload,
  gpuHolder,
  GpuKindError,
  type GpuKindFailure,
  gpuReset,
  type GpuResetOutcome,
  type GpuResetPayload,
  type GpuResetPorts,
  type GpuResetResult,
  XID_CONDITION,
  xidConditionsOf,
} from "./gpu_reset.ts";
export {
  ANNOTATION_BINDING,
  ANNOTATION_CGROUP_PARENT,
  ANNOTATION_DEVICE_ID,
  CDI_KIND,
  holdCdiNames,
  type HoldDevice,
  type HoldRecord,
  type ObservedHold,
  qualifiedCdiName,
  sameHold,
  type UnreadableHold,
} from "./hold.ts";
export {
  findGpu,
  type GpuInfo,
  type GpuInventory,
  gpuProblems,
  gpuUnhealthyReason,
  type MigInstance,
  type MigMode,
} from "./inventory.ts";
export { type DevicesAction, type DevicesObserved, planDevices, type SliceTarget } from "./plan.ts";
export {
  type EventSink,
  type GpuTool,
  GpuToolError,
  type HoldListing,
  type HoldStore,
  type HostMemorySource,
  NO_GPU_DRIVER,
  NoGpuDriver,
  PageSizeUnsupported,
  type SliceManager,
  type SliceRemoval,
  type XidConditions,
} from "./ports.ts";
export { type AllocationFailureReason, AllocationRefused } from "./reasons.ts";
export {
  allocationIdOfSlice,
  checkSliceRequest,
  PAGE_1GI,
  PAGE_2MI,
  SLICE_PARENTS,
  sliceName,
  type SliceSettings,
  sliceSettings,
} from "./slice.ts";
export { devicesSectionFromWire, type WireDevicesSection } from "./wire.ts";
