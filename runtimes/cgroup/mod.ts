/**
 * Host resources of holds: the {@link SliceManager} implementations for a hold's cgroup-v2 slice (direct cgroupfs
 * writes, and systemd's `set-property --runtime` with hugetlb through cgroupfs) and the host memory reader that hold
 * admission uses.
 *
 * @module
 */
export {
  ancestorDirs,
  CgroupError,
  enableControllers,
  isPopulated,
  kernelRmdir,
  type ReadBack,
  removeCgroupTree,
  type Rmdir,
  sliceDir,
  writeChecked,
} from "./cgroup_files.ts";
export {
  type CgroupfsOptions,
  CgroupfsSliceManager,
  CPU_PERIOD_US,
  type SliceFile,
  sliceFiles,
  writeSliceFile,
} from "./cgroupfs.ts";
export { hugePageSizes, ProcHostMemory, type ProcHostMemoryOptions } from "./host_memory.ts";
export { sliceProperties, type SystemdOptions, SystemdSliceManager } from "./systemd.ts";
export { ensureSimTree, setSimPopulated, SIM_CONTROLLERS, simRmdir, SimSliceManager } from "./sim_slices.ts";
