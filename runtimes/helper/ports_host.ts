/**
 * The host units' ports over the root helper: `sysctl.read`/`sysctl.apply`, `hugepages.read`/`hugepages.apply` and
 * `modules.read`/`modules.apply`, `package.read`/`package.apply`, `mig.read`/`mig.apply`,
 * `sharing.read`/`sharing.apply`, `kube.read`/`kube.join`/`kube.reset`.
 * The node names keys and pools; the helper builds every path.
 *
 * @module
 */
import type {
  HugepageObserved,
  HugepagePort,
  HugepageStep,
  KernelModulesApplied,
  KernelModulesObserved,
  KernelModulesPort,
  KernelModuleStep,
  KubeJoin,
  KubernetesApplied,
  KubernetesObserved,
  KubernetesPort,
  MigApplied,
  MigObserved,
  MigPort,
  MigStep,
  PackageApplied,
  PackageObserved,
  PackagePort,
  PackageStep,
  PackageUnit,
  PoolResult,
  SharingApplied,
  SharingObserved,
  SharingPort,
  SharingStep,
  SysctlObserved,
  SysctlPort,
  SysctlStep,
} from "../../core/host/mod.ts";
import type { HelperClient } from "./client.ts";

/** {@link SysctlPort} through the helper. */
export class HelperSysctl implements SysctlPort {
  constructor(readonly helper: HelperClient) {}
  read(keys: readonly string[]): Promise<SysctlObserved> {
    return this.helper.call("sysctl.read", { keys });
  }
  async apply(steps: readonly SysctlStep[]): Promise<Readonly<Record<string, string | null>>> {
    return (await this.helper.call("sysctl.apply", { steps })).live;
  }
}

/** {@link HugepagePort} through the helper. */
export class HelperHugepages implements HugepagePort {
  constructor(readonly helper: HelperClient) {}
  read(): Promise<HugepageObserved> {
    return this.helper.call("hugepages.read", {});
  }
  async apply(steps: readonly HugepageStep[]): Promise<readonly PoolResult[]> {
    return (await this.helper.call("hugepages.apply", { steps })).pools;
  }
}

/** {@link KernelModulesPort} through the helper. */
export class HelperKernelModules implements KernelModulesPort {
  constructor(readonly helper: HelperClient) {}
  read(): Promise<KernelModulesObserved> {
    return this.helper.call("modules.read", {});
  }
  apply(steps: readonly KernelModuleStep[]): Promise<KernelModulesApplied> {
    return this.helper.call("modules.apply", { steps });
  }
}

/** {@link PackagePort} through the helper. */
export class HelperPackages implements PackagePort {
  constructor(readonly helper: HelperClient) {}
  read(unit: PackageUnit, pkg: string): Promise<PackageObserved> {
    return this.helper.call("package.read", { unit, package: pkg });
  }
  apply(unit: PackageUnit, pkg: string, steps: readonly PackageStep[]): Promise<PackageApplied> {
    return this.helper.call("package.apply", { unit, package: pkg, steps });
  }
}

/** {@link MigPort} through the helper. */
export class HelperMig implements MigPort {
  constructor(readonly helper: HelperClient) {}
  read(): Promise<MigObserved> {
    return this.helper.call("mig.read", {});
  }
  apply(steps: readonly MigStep[]): Promise<MigApplied> {
    return this.helper.call("mig.apply", { steps });
  }
}

/** {@link SharingPort} through the helper. */
export class HelperSharing implements SharingPort {
  constructor(readonly helper: HelperClient) {}
  read(): Promise<SharingObserved> {
    return this.helper.call("sharing.read", {});
  }
  apply(steps: readonly SharingStep[]): Promise<SharingApplied> {
    return this.helper.call("sharing.apply", { steps });
  }
}

/** {@link KubernetesPort} through the helper; the token rides in `kube.join`'s arguments, which the helper never logs. */
export class HelperKubernetes implements KubernetesPort {
  constructor(readonly helper: HelperClient) {}
  read(): Promise<KubernetesObserved> {
    return this.helper.call("kube.read", {});
  }
  join(join: KubeJoin, token: string): Promise<KubernetesApplied> {
    return this.helper.call("kube.join", { ...join, token });
  }
  reset(): Promise<KubernetesApplied> {
    return this.helper.call("kube.reset", {});
  }
}
