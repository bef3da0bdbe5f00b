/**
 * The `ramdisk` role's entry point: inside the provisioning initramfs. Wiring only. Like the node, the ramdisk agent
 * runs with scoped permission flags (`roles/permissions.ts`: `/run/bcd`, where its data dir lives, `/etc/bcd` read,
 * network) beside the root `bcd-helper` (000 §privilege separation), which serves it with `[helper] role =
 * "ramdisk"`: the boot id and the host inventory of `inventory.refresh` go to the helper's socket (`[helper] socket`,
 * default `/run/bcd/helper.sock`; access by the socket's group `[helper] node_group`), and the agent refuses to start
 * when the helper cannot be reached. The ramdisk has no `node.reboot` (its reboot is `boot.kexec`). `diag.dcgm`
 * runs `dcgmi diag` through the helper's `dcgm.diag`, the node's code. `disk.wipe` asks the helper's `disk.wipe` for
 * each disk by its by-id name (`core/commands/kind_handlers/disk_wipe.ts`; root resolves, re-checks and wipes,
 * `runtimes/disks/`); `deploy.image` asks the helper's `disk.deploy`, which fetches the image itself and writes (raw)
 * or converts while streaming (qcow2), checks and verifies it (`core/commands/kind_handlers/deploy_image.ts`).
 * `boot.kexec` asks the helper's `kexec.load` (root reads the kernel from the deployed disk or downloads it, then
 * `kexec -l`) and `kexec.exec` (`kexec -e`), after the dispatcher journaled `running`
 * (`core/commands/kind_handlers/boot_kexec.ts`). `diag.nvml` is the node's handler: `nvidia-smi -q -x` run by the
 * agent (`[devices] nvidia_smi`), each GPU's NUMA node asked of root (`pci.numa_node`); without a driver it fails
 * `no-gpu-driver`. In the initramfs both processes run as root:
 * the separation is Deno's grant, not a uid (the helper makes the socket's directory, `/run/bcd` by default, 0750).
 *
 * @module
 */
import { HandlerRegistry } from "../core/commands/handlers.ts";
import { kindsForRole } from "../core/commands/kinds.ts";
import { DEFAULT_HELPER_SOCKET } from "../core/helper/mod.ts";
import { hostKindHandlers } from "../runtimes/host/mod.ts";
import { HelperDcgm, HelperGpuTool, HelperHostInventory } from "../runtimes/helper/ports.ts"; // not mod.ts: the helper server stays out
import { HelperDiskWiper, HelperImageDeployer, HelperKexec } from "../runtimes/helper/ports_disk.ts";
import { bootKexecHandler, deployImageHandler, diskWipeHandler } from "../core/commands/kind_handlers/mod.ts";
import { diagDcgmHandler, diagNvmlHandler } from "../core/converge/devices/mod.ts";
import { agentCommands, helperOf } from "./_agent_cli.ts";
import { driverInvoke } from "./_plugins.ts";
import { runCli, type Subcommand } from "./_cli.ts";

/** The `ramdisk` role's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = {
  ...agentCommands({
    role: "ramdisk",
    handles: [
      "inventory.refresh",
      "logs.collect",
      "diag.dcgm",
      "driver.invoke",
      "disk.wipe",
      "deploy.image",
      "boot.kexec",
      "diag.nvml",
    ],
    defaultDataDir: "/run/bcd",
    helperSocket: (config) => config.helper.socket ?? DEFAULT_HELPER_SOCKET,
    handlers(ctx) {
      const mine = new Set(kindsForRole("ramdisk").map((k) => k.kind));
      const reg = new HandlerRegistry();
      for (
        const h of hostKindHandlers({
          journal: ctx.journal,
          logRing: ctx.logRing,
          host: new HelperHostInventory(helperOf(ctx)),
        })
      ) {
        if (mine.has(h.kind)) reg.register(h); // node.reboot is not a ramdisk kind (boot.kexec is)
      }
      reg.register(diskWipeHandler({
        wiper: new HelperDiskWiper(helperOf(ctx)),
        inventory: new HelperHostInventory(helperOf(ctx)),
      }));
      reg.register(deployImageHandler({ deployer: new HelperImageDeployer(helperOf(ctx)) }));
      reg.register(bootKexecHandler({ kexec: new HelperKexec(helperOf(ctx)) }));
      // The node's diag.nvml: nvidia-smi queried here, NUMA nodes from root; no XID watch runs in the ramdisk.
      reg.register(
        diagNvmlHandler({ gpu: new HelperGpuTool(helperOf(ctx), { binary: ctx.config.devices.nvidiaSmi }) }),
      );
      // The ramdisk runs no workload: no hold and no VM keeps a GPU busy.
      return reg.register(diagDcgmHandler({
        dcgm: new HelperDcgm(helperOf(ctx)),
        holds: () => Promise.resolve({ holds: [], unreadable: [] }),
        passthrough: () => [],
      })).register(driverInvoke(ctx));
    },
  }),
};

if (import.meta.main) {
  Deno.exit(await runCli("ramdisk", Deno.args, COMMANDS));
}
