/**
 * Which ops a helper answers, by the agent role it serves (`[helper] role`, default `node`): a helper beside a site
 * agent or inside the provisioning ramdisk answers only what that role's wired kinds use, and refuses every other op
 * of the protocol `not-allowed` before it looks at its arguments.
 *
 * | role      | ops                                             | for                                              |
 * | --------- | ----------------------------------------------- | ------------------------------------------------ |
 * | `node`    | every op but `disk.*` and `kexec.*`             | boot id, inventory, devices, `gpu.reset`, reboot |
 * | `site`    | `host.boot_id`, `host.inventory`, `host.doctor`, `node.reboot`, `plugin.*`, `daemon.*` | boot id, `inventory.refresh`, `doctor`, `node.reboot`, `driver.invoke`, self-update |
 * | `ramdisk` | `host.boot_id`, `host.inventory`, `host.doctor`, `pci.numa_node`, `dcgm.diag`, `plugin.*`, `disk.wipe*`, `disk.deploy`, `kexec.*` | boot id, `inventory.refresh`, `doctor`, `diag.dcgm`, `driver.invoke`, `disk.wipe`, `deploy.image`, `boot.kexec`, `diag.nvml` |
 *
 * A node never wipes a disk nor kexecs (the provisioning kinds are the ramdisk's); a site never touches GPU holds or slices; a ramdisk has no `node.reboot` (its reboot is `boot.kexec`). The ops its
 * later kinds need (the BMC kinds) join its row with them.
 *
 * @module
 */
import type { KindRole } from "../commands/kinds.ts";
import { HELPER_OPS, type HelperOp } from "./protocol.ts";

/** The agent roles a helper may serve. */
export const HELPER_ROLES: readonly KindRole[] = ["node", "site", "ramdisk"];

/** The role a helper serves when `[helper] role` is unset. */
export const DEFAULT_HELPER_ROLE: KindRole = "node";

/** The table above, row by row, each in the protocol's op order. */
export const HELPER_OPS_BY_ROLE: Readonly<Record<KindRole, readonly HelperOp[]>> = {
  node: HELPER_OPS.filter((op) => !op.startsWith("disk.") && !op.startsWith("kexec.")),
  site: [
    "host.boot_id",
    "host.inventory",
    "host.doctor",
    "node.reboot",
    "plugin.list",
    "plugin.manifest",
    "plugin.attach",
    "daemon.status",
    "daemon.install",
    "daemon.confirm",
  ],
  ramdisk: [
    "host.boot_id",
    "host.inventory",
    "host.doctor",
    "pci.numa_node",
    "dcgm.diag",
    "plugin.list",
    "plugin.manifest",
    "plugin.attach",
    "disk.wipe",
    "disk.wipe_status",
    "disk.wipe_cancel",
    "disk.deploy",
    "kexec.load",
    "kexec.exec",
  ],
};

/** Whether `s` names a role a helper may serve. */
export function isHelperRole(s: string): s is KindRole {
  return (HELPER_ROLES as readonly string[]).includes(s);
}

/** The ops a helper serving `role` answers. */
export function opsOfRole(role: KindRole): ReadonlySet<HelperOp> {
  return new Set(HELPER_OPS_BY_ROLE[role]);
}
