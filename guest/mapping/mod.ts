/**
 * Mapping beneath a layered root (seed 002 §Probes, worker::mapping): the {@link Mapper} and the root's own
 * {@link RootMapper} (reserved sets, links and magic links refused at every component, kinds, nested creation,
 * a latch), over the file-system operations {@link FsOps} of a Linux guest ({@link LinuxFs}) or of memory
 * ({@link MemFs}), and the probes map, map-refused and map-checks that exercise them.
 *
 * @module
 */
export { errnoOf, FsError, type FsOps, type MountRow, mountsBelow, type NodeKind, type WriterRace } from "./fs_ops.ts";
export { isCanonicalTarget, Mapper, MapRefused, type MapRequest, type RefusalKind, RootMapper } from "./mapper.ts";
export {
  AGENT_PATH,
  CONTAINER_ROOT_RESERVED,
  reservedConflict,
  type ReservedSet,
  RUNTIME_RESERVED,
} from "./reserved.ts";
export { LinuxFs, type LinuxFsOptions } from "./linux_fs.ts";
export { MemFs, type MemNode } from "./mem_fs.ts";
export {
  ADAPTER_RESERVED,
  type MappingContext,
  OUTSIDE,
  probeMap,
  probeMapChecks,
  probeMapRefused,
  RESERVED_CHECKS,
  SOURCES,
} from "./mapping_probes.ts";
