/**
 * The `node` role's `host` section converger: the host units through the helper. Apart from `node.ts` so that its
 * code (`core/host`, the units' helper ports) loads on the section's first pass rather than at every start
 * (`core/converge/lazy.ts`, issue 24).
 *
 * @module
 */
import type { SectionConverger } from "../core/converge/engine.ts";
import {
  externallyManagedHost,
  gpuSharingUnit,
  HostConverger,
  hostSectionConverger,
  hugepagesUnit,
  kernelModulesUnit,
  kubernetesJoinUnit,
  migHoldUsers,
  migLayoutUnit,
  PACKAGE_UNITS,
  packageUnit,
  sysctlUnit,
} from "../core/host/mod.ts";
import { HelperHoldStore } from "../runtimes/helper/ports.ts";
import {
  HelperHugepages,
  HelperKernelModules,
  HelperKubernetes,
  HelperMig,
  HelperPackages,
  HelperSharing,
  HelperSysctl,
} from "../runtimes/helper/ports_host.ts";
import { helperOf, type InstancePeers, type WiringContext } from "./_agent_cli.ts";

/**
 * The `host` section: its units through the helper (`modules.*`, `sysctl.*`, `hugepages.*`, `package.*`, `mig.*`,
 * `sharing.*`, `kube.*` ops; the join token from the session's SecretRequest broker), or, with `[host] units = false`,
 * no converger: a non-empty section is `UNSUPPORTED` `HostManagedExternally`.
 */
export function hostConverger(ctx: WiringContext, peers: Pick<InstancePeers, "secrets" | "wake">): SectionConverger {
  if (!ctx.config.host.units) return externallyManagedHost();
  const helper = helperOf(ctx);
  return hostSectionConverger(
    new HostConverger([
      kernelModulesUnit(new HelperKernelModules(helper)),
      sysctlUnit(new HelperSysctl(helper)),
      hugepagesUnit(new HelperHugepages(helper)),
      ...PACKAGE_UNITS.map((u) => packageUnit(u, new HelperPackages(helper))),
      // The holds bound now, read back from the helper's hold files each pass.
      migLayoutUnit(new HelperMig(helper), async () => migHoldUsers((await new HelperHoldStore(helper).list()).holds)),
      gpuSharingUnit(new HelperSharing(helper), async () =>
        (await new HelperHoldStore(helper).list()).holds
          .filter((h) => h.devices.some((d) => d.class === "gpu.slot")).map((h) => h.allocationId)),
      kubernetesJoinUnit(new HelperKubernetes(helper), peers),
    ]),
  );
}
