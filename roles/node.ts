/**
 * The `node` role's entry point: GPU and VPS hosts. Wiring only. The node runs unprivileged, with scoped permission
 * flags (`roles/permissions.ts`), beside the root `bcd-helper` (000 §privilege separation): everything under /proc,
 * /sys and /dev and every root-only write goes to the helper's socket (`[helper] socket`, default
 * `/run/bcd/helper.sock`) — the boot id, the host inventory and memory, the CDI/env hold files, the hold slices, the
 * GPUs' NUMA nodes, the host section's units (kernel modules, sysctl, huge pages, the NVIDIA packages, the MIG layout, GPU sharing, the Kubernetes join), `gpu.reset`, `node.reboot`, sshd's access files
 * (`access.*`) and, beside an instance runtime, bcd's nftables tables (`nft.*`). The node still runs `nvidia-smi`
 * itself for queries, does HTTPS log and snapshot uploads and runs the image checks. It refuses to start when the helper cannot be reached.
 *
 * @module
 */
import { HandlerRegistry } from "../core/commands/handlers.ts";
import { DEFAULT_HELPER_SOCKET } from "../core/helper/mod.ts";
import { lazyConverger } from "../core/converge/lazy.ts";
import { hostKindHandlers } from "../runtimes/host/mod.ts";
import { JwksHolder } from "../core/access/jwks.ts";
import { Tunnels } from "../core/access/tunnels.ts";
import { InstanceDialer } from "../runtimes/access/instance_dialer.ts";
// The helper's client-side ports, not runtimes/helper/mod.ts: that also loads the helper's server and host backends
// (nft, sshd, libvirt), which this process never runs.
import {
  HelperDcgm,
  HelperGpuTool,
  HelperHoldStore,
  HelperHostInventory,
  HelperHostMemory,
  HelperRebooter,
  HelperSliceManager,
} from "../runtimes/helper/ports.ts";
import { diagDcgmHandler } from "../core/converge/devices/gpu_kind_handlers.ts";
import { instanceSnapshotHandler } from "../core/commands/kind_handlers/instance_snapshot.ts";
import type { InstanceSnapshotter } from "../core/commands/kind_handlers/instance_snapshot.ts";
import { instanceMigrateHandler } from "../core/commands/kind_handlers/instance_migrate.ts";
import type { LibvirtMigrator } from "../runtimes/migration/libvirt_migrator.ts";
import { lazyHttpsUploader } from "../runtimes/host/lazy_uploader.ts";
import type { DevicePorts } from "./_devices.ts";
import { earlyInstances, type InstancesEarly, nodeInstances } from "./node_instances.ts";
import { runCli, type Subcommand } from "./_cli.ts";
import {
  agentCommands,
  helperOf,
  type InstancePeers,
  type InstanceWiring,
  type RoleWiring,
  type WiringContext,
} from "./_agent_cli.ts";
import { IMAGE_COMMAND } from "./node_image_cli.ts";
import { driverInvoke } from "./_plugins.ts";
import { JOURNAL_COMMAND } from "./node_journal_cli.ts";
import { doctorCommand } from "./doctor_cli.ts";
import { confirmRelease, daemonConverger, daemonUpgrade } from "./_self_update.ts";

/** `nvidia-smi` for queries, NUMA nodes and resets through the helper. */
function _gpu(ctx: WiringContext): HelperGpuTool {
  return new HelperGpuTool(helperOf(ctx), { binary: ctx.config.devices.nvidiaSmi });
}

const _jwksByCtx = new WeakMap<WiringContext, JwksHolder>();

/** The snapshot taker of the daemon's libvirt runtime, once `_instances` made one (`instance.snapshot` uses it). */
const _snapshotsByCtx = new WeakMap<WiringContext, InstanceSnapshotter>();

/** The migrator of the daemon's libvirt runtime, once `_instances` made one (`instance.migrate` uses it). */
const _migratorsByCtx = new WeakMap<WiringContext, LibvirtMigrator>();

/** The exec-ticket JWKS the access converger takes and the tunnels verify against: one per daemon. */
function _jwks(ctx: WiringContext): JwksHolder {
  let j = _jwksByCtx.get(ctx);
  if (!j) _jwksByCtx.set(ctx, j = new JwksHolder());
  return j;
}

/** The host's devices, through the helper: CDI specs and env files, the hold slices, host memory. */
function _devices(ctx: WiringContext): DevicePorts {
  const helper = helperOf(ctx);
  return {
    gpu: _gpu(ctx),
    holds: new HelperHoldStore(helper),
    slices: new HelperSliceManager(helper),
    hostMemory: new HelperHostMemory(helper),
  };
}

/**
 * The `instances` converger over the host's runtimes (`roles/node_instances.ts`, one wiring for every mix), from what
 * was probed and prepared while the journal opened; its snapshot taker and migrator serve `instance.snapshot` and
 * `instance.migrate`.
 */
async function _instances(ctx: WiringContext, peers: InstancePeers, early: InstancesEarly): Promise<InstanceWiring> {
  const w = await nodeInstances(ctx, peers, { early });
  if (w.snapshotter) _snapshotsByCtx.set(ctx, w.snapshotter);
  if (w.migrator) _migratorsByCtx.set(ctx, w.migrator);
  return w;
}

/** The `node` role's daemon wiring (`run`, `join`, `version`). */
export const NODE_WIRING: RoleWiring = {
  role: "node",
  // host kinds, diag.dcgm (dcgmi through the helper) and instance.snapshot, plus gpu.reset and diag.nvml where the role has devices
  // (registerGpuKinds)
  handles: [
    "inventory.refresh",
    "logs.collect",
    "node.reboot",
    "diag.dcgm",
    "gpu.reset",
    "diag.nvml",
    "instance.snapshot",
    "instance.migrate",
    "daemon.upgrade",
    "driver.invoke",
  ],
  defaultDataDir: "/var/lib/bcd",
  capabilities: ["devices.limits", "binding.kubernetes"],
  helperSocket: (config) => config.helper.socket ?? DEFAULT_HELPER_SOCKET,
  devices: _devices,
  convergers: (ctx, _events, _conditions, peers) => [
    // The host units' code (core/host, ~45 KB) loads on the section's first pass, not at every start (issue 24).
    lazyConverger("host", async () => (await import("./node_host.ts")).hostConverger(ctx, peers)),
    // The access section's converger (sshd's files through the helper) loads on that section's first pass too.
    lazyConverger("access", async () => {
      const [{ AccessConverger }, { HelperAccessHost }] = await Promise.all([
        import("../core/access/converger.ts"),
        import("../runtimes/helper/access_port.ts"),
      ]);
      return new AccessConverger({
        host: new HelperAccessHost(helperOf(ctx)),
        nodeId: ctx.identity.nodeId,
        jwks: _jwks(ctx),
      });
    }),
    daemonConverger(ctx),
  ],
  onWelcome: confirmRelease,
  instanceConverger: async (start) => {
    const early = await earlyInstances(helperOf(start), start.log);
    return (ctx, peers) => _instances(ctx, peers, early);
  },
  tunnels: (ctx, agent) =>
    new Tunnels({
      nodeId: ctx.identity.nodeId,
      jwks: _jwks(ctx),
      ledger: ctx.journal,
      dialer: new InstanceDialer({ instances: agent.instances }),
      serverNow: agent.serverNow,
      ready: agent.ready,
      log: ctx.log,
    }),
  handlers(ctx) {
    const helper = helperOf(ctx);
    const reg = new HandlerRegistry();
    for (
      const h of hostKindHandlers({
        journal: ctx.journal,
        logRing: ctx.logRing,
        gpus: _gpu(ctx),
        host: new HelperHostInventory(helper),
        rebooter: new HelperRebooter(helper),
      })
    ) reg.register(h);
    reg.register(daemonUpgrade(ctx));
    reg.register(
      instanceSnapshotHandler({ snapshotter: () => _snapshotsByCtx.get(ctx), uploader: lazyHttpsUploader() }),
    );
    reg.register(instanceMigrateHandler({ migrator: () => _migratorsByCtx.get(ctx), nodeId: ctx.identity.nodeId }));
    // From level 2 a GPU a live hold names is busy; VM pass-through is not tracked here yet, as for gpu.reset.
    reg.register(driverInvoke(ctx));
    reg.register(diagDcgmHandler({
      dcgm: new HelperDcgm(helper),
      holds: () => new HelperHoldStore(helper).list(),
      passthrough: () => [],
    }));
    return reg;
  },
};

/** The `node` role's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = {
  ...agentCommands(NODE_WIRING),
  image: IMAGE_COMMAND,
  journal: JOURNAL_COMMAND,
  doctor: doctorCommand("node", "/var/lib/bcd"),
};

if (import.meta.main) {
  Deno.exit(await runCli("node", Deno.args, COMMANDS));
}
