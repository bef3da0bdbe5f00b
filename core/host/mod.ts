/**
 * The `host` section (000 §NodeSpec, the `host` row; §Convergence and status): config units converged in a fixed
 * order by {@link HostConverger}, each a {@link UnitDriver} that checks its settings against its own default-deny
 * schema, observes the host through a port ({@link SysctlPort}, {@link HugepagePort}), plans the minimal steps and
 * applies them; a unit dropped from the section undoes exactly what bcd did.
 *
 * | file              | what                                                                 |
 * | ----------------- | -------------------------------------------------------------------- |
 * | `units.ts`        | unit names, order, dependencies, the section's parse                 |
 * | `schema.ts`       | default-deny settings checks (unknown keys refused with unit and key) |
 * | `sysctl.ts`       | the `sysctl` unit's settings, allowlist and plan                     |
 * | `hugepages.ts`    | the `hugepages` unit's settings and plan                             |
 * | `kernel_modules.ts` | the `kernel-modules` unit's settings and plan                      |
 * | `gpu_sharing.ts`  | the `gpu-sharing` unit's settings and plan (MPS or time-slicing)      |
 * | `mig_layout.ts`   | the `mig-layout` unit's settings and plan (holds checked before any removal) |
 * | `packages.ts`     | the package units' settings and plan (`nvidia-driver`, `fabric-manager`, `container-toolkit`) |
 * | `kubernetes_join.ts` | the `kubernetes-join` unit's settings and plan (joined elsewhere refused)  |
 * | `kubernetes_unit.ts` | its driver: the join token from a `SecretRequest`, beside the pass        |
 * | `unit.ts`         | the unit driver interface and the `kernel-modules` / `sysctl` / `hugepages` drivers |
 * | `converger.ts`    | the converger, the stop rule, `RebootRequired`, `HostManagedExternally` |
 *
 * @example
 * ```ts ignore
 * const host = new HostConverger([sysctlUnit(sysctlPort), hugepagesUnit(hugepagePort)]);
 * const converger = config.host.units ? hostSectionConverger(host) : externallyManagedHost();
 * ```
 *
 * A listed unit the converger was built without fails the section `UnitUnsupported:<unit>` before anything runs.
 *
 * @module
 */
export {
  isApiServerEndpoint,
  isBootstrapToken,
  isCaCertHash,
  isDnsSubdomain,
  isLabelKey,
  isLabelValue,
  type KubeJoin,
  KUBERNETES_JOIN_PURPOSE,
  KubernetesJoinRefused,
  type KubernetesJoinSettings,
  type KubernetesObserved,
  type KubernetesStep,
  labelsProblem,
  MAX_CA_HASHES,
  MAX_NODE_LABELS,
  MAX_NODE_TAINTS,
  nodeLabelProblem,
  type NodeTaint,
  parseKubernetesJoinSettings,
  planKubernetesJoin,
  taintProblem,
} from "./kubernetes_join.ts";
export { type KubernetesJoinPeers, kubernetesJoinUnit } from "./kubernetes_unit.ts";
export { externallyManagedHost, HostConverger, hostSectionConverger, REBOOT_REQUIRED } from "./converger.ts";
export {
  HUGEPAGE_SIZES,
  type HugepageObserved,
  type HugepagePool,
  type HugepageSettings,
  type HugepageSize,
  type HugepageStep,
  isHugepageSize,
  type ManagedPool,
  MAX_HUGEPAGES,
  MAX_NUMA_NODE,
  parseHugepageSettings,
  planHugepages,
  poolKey,
  type PoolState,
  type SizeState,
} from "./hugepages.ts";
export {
  isModuleName,
  isModuleOptions,
  type KernelModuleSettings,
  type KernelModulesObserved,
  type KernelModuleStep,
  type ManagedModule,
  MAX_MODULES,
  moduleKey,
  type ModuleSpec,
  parseKernelModuleSettings,
  planKernelModules,
} from "./kernel_modules.ts";
export type {
  HoldUsers,
  HugepagePort,
  KernelModulesApplied,
  KernelModulesPort,
  KubernetesApplied,
  KubernetesPort,
  MigApplied,
  MigPort,
  PackageApplied,
  PackagePort,
  PoolResult,
  SharingApplied,
  SharingPort,
  SlotHolds,
  SysctlPort,
} from "./ports.ts";
export {
  GpuSharingRefused,
  type GpuSharingSettings,
  MPS_COMPUTE_MODE,
  parseGpuSharingSettings,
  planGpuSharing,
  type SharingObserved,
  type SharingStep,
} from "./gpu_sharing.ts";
export {
  isGpuUuid,
  isMigProfile,
  MAX_MIG_GPUS,
  MAX_MIG_INSTANCES,
  migHoldUsers,
  type MigInstance,
  MigLayoutRefused,
  type MigLayoutSettings,
  type MigObserved,
  type MigStep,
  migStepsProblem,
  parseMigLayoutSettings,
  planMigLayout,
} from "./mig_layout.ts";
export {
  DEFAULT_PACKAGES,
  driverRebootReason,
  isPackageUnit,
  isPackageVersion,
  isUnitPackage,
  PACKAGE_PREFIXES,
  PACKAGE_UNITS,
  type PackageObserved,
  type PackageSettings,
  packageSettingsParser,
  type PackageStep,
  type PackageUnit,
  planPackage,
  UNIT_SERVICES,
  upstreamVersion,
} from "./packages.ts";
export {
  isAllowedSysctlKey,
  isSysctlValue,
  type ManagedSysctl,
  MAX_SYSCTL_KEYS,
  MAX_SYSCTL_VALUE,
  normalizeSysctlValue,
  parseSysctlSettings,
  planSysctl,
  SYSCTL_PREFIXES,
  type SysctlObserved,
  type SysctlSettings,
  type SysctlStep,
} from "./sysctl.ts";
export {
  gpuSharingUnit,
  HostUnitError,
  hugepagesUnit,
  kernelModulesUnit,
  migLayoutUnit,
  packageUnit,
  sysctlUnit,
  type UnitDriver,
  type UnitResult,
} from "./unit.ts";
export {
  canonical,
  dependentsOf,
  HostSettingsError,
  isUnitName,
  MAX_SETTINGS_BYTES,
  parseHostSection,
  UNIT_DEPENDS,
  UNIT_ORDER,
  type UnitName,
} from "./units.ts";
