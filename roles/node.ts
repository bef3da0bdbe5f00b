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
import { VolumeKeeper } from "../core/volumes/keeper.ts";
import { FileVolumeStore, volumesDir } from "../runtimes/volumes/file_store.ts";
import { HandlerRegistry } from "../core/commands/handlers.ts";
import { DEFAULT_HELPER_SOCKET } from "../core/helper/mod.ts";
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
import type { SectionConverger } from "../core/converge/engine.ts";
import { hostKindHandlers } from "../runtimes/host/mod.ts";
import { AccessConverger, JwksHolder } from "../core/access/mod.ts";
import { Tunnels } from "../core/access/tunnels.ts";
import { InstanceDialer } from "../runtimes/access/instance_dialer.ts";
import { HelperAccessHost } from "../runtimes/helper/access_port.ts";
// The helper's client-side ports, not runtimes/helper/mod.ts: that also loads the helper's server and host backends
// (nft, sshd, libvirt), which this process never runs.
import {
  HelperDcgm,
  HelperGpuTool,
  HelperHoldStore,
  HelperHostInventory,
  HelperHostMemory,
  HelperMemoryPressure,
  HelperRebooter,
  HelperSliceManager,
} from "../runtimes/helper/ports.ts";
import {
  HelperHugepages,
  HelperKernelModules,
  HelperKubernetes,
  HelperMig,
  HelperPackages,
  HelperSharing,
  HelperSysctl,
} from "../runtimes/helper/ports_host.ts";
import { InstancesConverger } from "../core/converge/instances/mod.ts";
import { BalloonLoop } from "../core/balloon/mod.ts";
import { IdentityRebinder } from "../core/converge/instances/identity_rebind.ts";
import { ReboundFile } from "../core/rebind/mod.ts";
import { realClock } from "../core/clock.ts";
import { diagDcgmHandler } from "../core/converge/devices/mod.ts";
import { HelperError } from "../core/helper/mod.ts";
import { HelperLibvirtHost } from "../runtimes/libvirt/helper_port.ts";
import { LibvirtRuntime } from "../runtimes/libvirt/libvirt_runtime.ts";
import { CH_RUNTIME, ChRuntime } from "../runtimes/cloudhypervisor/ch_runtime.ts";
import { HelperChHost } from "../runtimes/cloudhypervisor/helper_port.ts";
import { ChSnapshots } from "../runtimes/cloudhypervisor/ch_snapshots.ts";
import { SnapshotRouter } from "../runtimes/snapshot_router.ts";
import { HelperNft } from "../runtimes/helper/nft_port.ts";
import { NodeNetwork } from "../runtimes/nft/node_network.ts";
import { SnapshotStore } from "../runtimes/libvirt/snapshot_store.ts";
import { cleanStaging, LibvirtSnapshots, snapshotsDir } from "../runtimes/libvirt/snapshots.ts";
import { instanceSnapshotHandler } from "../core/commands/kind_handlers/mod.ts";
import type { InstanceSnapshotter } from "../core/commands/kind_handlers/instance_snapshot.ts";
import { instanceMigrateHandler } from "../core/commands/kind_handlers/instance_migrate.ts";
import {
  LibvirtMigrator,
  type LibvirtMigratorOptions,
  recoverMigrations,
} from "../runtimes/migration/libvirt_migrator.ts";
import { MigrationPhaseBoard } from "../runtimes/migration/phase_board.ts";
import { HttpsUploader } from "../runtimes/host/https_put.ts";
import type { DevicePorts } from "./_devices.ts";
import { runCli, type Subcommand } from "./_cli.ts";
import { agentCommands, helperOf, type InstancePeers, type InstanceWiring, type WiringContext } from "./_agent_cli.ts";
import { IMAGE_COMMAND } from "./node_image_cli.ts";
import { driverInvoke, pluginRuntimes } from "./_plugins.ts";
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

/** The host CPU model from the helper's inventory, read once (memory snapshots record it and restores check it). */
function _cpuModel(ctx: WiringContext): () => Promise<string> {
  let model: Promise<string> | undefined;
  return () => model ??= new HelperHostInventory(helperOf(ctx)).read().then((inv) => inv.cpu?.model ?? "");
}

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
 * The `host` section: its units through the helper (`modules.*`, `sysctl.*`, `hugepages.*`, `package.*`, `mig.*`,
 * `sharing.*`, `kube.*` ops; the join token from the session's SecretRequest broker), or, with `[host] units = false`,
 * no converger: a non-empty section is `UNSUPPORTED` `HostManagedExternally`.
 */
function _host(ctx: WiringContext, peers: Pick<InstancePeers, "secrets" | "wake">): SectionConverger {
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

/**
 * The `instances` converger: `libvirt-kvm` when the helper has virsh on its PATH (its `libvirt.list` answers) and
 * `cloud-hypervisor` when it has that binary (its `ch.*` ops answer; `_chRuntime`), both when it has both, no runtime
 * otherwise (a non-empty section then fails `this host runs no instance runtime`). Starts are admitted
 * against the host's memory, read through the helper. The runtime enforces placement, so `Hello` advertises
 * `instance.placement`. With the runtime come its nftables rules (000 §Instances, through the helper's `nft.*` ops):
 * bcd's tables are made sure of before the session starts, so before any domain starts; `instance.network-policy` and
 * `instance.ssh-host-only` are advertised only when they loaded (`Hello` is sent once per session, so a host whose
 * rules load later advertises them on its next session); every pass loads the section's rules first; the 5-second
 * integrity check runs on a timer until the daemon stops. With the runtime comes the volume store (000 §Persistent
 * volumes: `<data dir>/volumes`, the node's own files; libvirt attaches them through the helper), so `Hello`
 * advertises `instance.volumes` and every status report carries `volume_storage`.
 */
async function _instances(
  ctx: WiringContext,
  peers: InstancePeers,
): Promise<InstanceWiring> {
  const helper = helperOf(ctx);
  const memory = new HelperHostMemory(helper);
  const plugins = await pluginRuntimes(ctx, ["libvirt-kvm", CH_RUNTIME]);
  const cpuModel = _cpuModel(ctx);
  const dir = snapshotsDir(ctx.dataDir);
  const snapshots = new SnapshotStore({ dir, log: ctx.log });
  const ch = await _chRuntime(ctx, snapshots, cpuModel);
  try {
    await helper.call("libvirt.list", {});
  } catch (e) {
    if (e instanceof HelperError && e.code === "failed" && e.detail.includes("libvirt is not installed")) {
      if (ch) return await _chOnly(ctx, peers, ch, plugins, snapshots, cpuModel);
      ctx.log.info({}, "instances: the helper has neither virsh nor cloud-hypervisor; no instance runtime");
      return { converger: new InstancesConverger(plugins, { memory }), capabilities: [] };
    }
    if (!(e instanceof HelperError)) throw e;
    ctx.log.warn({ err: e.message }, "instances: libvirt.list failed at start; libvirt-kvm stays on and retries");
  }
  const host = new HelperLibvirtHost(helper);
  const removed = [...await cleanStaging(dir), ...await cleanStaging(`${ctx.dataDir}/libvirt/instances`)];
  if (removed.length > 0) ctx.log.info({ removed }, "instances: snapshot stages a crash left behind removed");
  const rt = new LibvirtRuntime({ host, dataDir: ctx.dataDir, snapshots, cpuModel, log: ctx.log });
  const net = new NodeNetwork(new HelperNft(helper), ctx.log);
  const volumes = new VolumeKeeper(new FileVolumeStore({ dir: volumesDir(ctx.dataDir), log: ctx.log }), ctx.log);
  const rebinder = _rebinder(ctx, peers, [rt, ...(ch ? [ch] : [])]);
  const converger = new InstancesConverger([rt, ...(ch ? [ch] : []), ...plugins], {
    rebinder,
    memory,
    volumes,
    network: net.rules,
    snapshots,
    secrets: peers.secrets,
    holdsCommittedBytes: peers.holdsCommittedBytes,
    wake: peers.wake,
  });
  const writable = (id: string) => (converger.specOf(id)?.volumes ?? []).some((v) => !v.read_only);
  const lvSnaps = new LibvirtSnapshots({
    runtime: rt,
    host,
    dataDir: ctx.dataDir,
    cpuModel,
    hasWritableVolume: writable,
    log: ctx.log,
  });
  _snapshotsByCtx.set(
    ctx,
    ch
      ? new SnapshotRouter([
        {
          runtime: CH_RUNTIME,
          holds: (id) => _chSnapshots(ctx, ch, cpuModel, writable).holds(id),
          snapshotter: _chSnapshots(ctx, ch, cpuModel, writable),
        },
        { runtime: rt.name, holds: () => Promise.resolve(true), snapshotter: lvSnaps },
      ])
      : lvSnaps,
  );
  // instance.migrate: moves a crash interrupted are resolved before the converger's first pass (each to exactly one
  // running instance; runtimes/migration/libvirt_migrator.ts), then the migrator serves the command.
  const moves = new MigrationPhaseBoard();
  const migration: LibvirtMigratorOptions = {
    host,
    instanceDir: (id) => rt.instanceDir(id),
    log: ctx.log,
    onPhase: (id, phase, gauge) => moves.record(id, phase, gauge),
  };
  const recovered = await recoverMigrations(`${ctx.dataDir}/libvirt/instances`, migration);
  if (recovered.length > 0) ctx.log.warn({ recovered }, "instances: moves a crash interrupted were resolved");
  _migratorsByCtx.set(ctx, new LibvirtMigrator(migration));
  const balloons = _balloonLoop(ctx, converger, [rt, ...(ch ? [ch] : [])]);
  ctx.log.info({ runtime: rt.name }, "instances: runtime on");
  const network = await net.prepare();
  net.start();
  // Fleet config (seed 004) to the instances with a framing channel, when the control plane's endpoint is set.
  const fleet = new AbortController();
  const url = ctx.config.instances.agentConfigUrl;
  if (url !== undefined) {
    // Loaded only here: the delivery and the guest framing client it drives are ~26 modules a node without the
    // endpoint never needs (issue 24).
    const [{ InstanceConfigDelivery }, { HttpConfigSource }] = await Promise.all([
      import("../runtimes/agent_config/instance_delivery.ts"),
      import("../runtimes/agent_config/http_source.ts"),
    ]);
    const delivery = new InstanceConfigDelivery({
      source: new HttpConfigSource({ url }),
      running: async () => (await host.list()).filter((d) => d.plan && d.state === "running").map((d) => d.name),
      instanceDir: (id) => rt.instanceDir(id),
      log: ctx.log,
    });
    delivery.run(fleet.signal).catch((e) => ctx.log.error({ err: String(e) }, "agent config delivery ended"));
  }
  return {
    converger,
    capabilities: ["instance.placement", "instance.volumes", ...network],
    migrations: () => moves.moving(),
    balloons: () => balloons.reclaimed(),
    stop: async () => {
      fleet.abort();
      net.stop();
      await balloons.stop();
      await rebinder.stop();
    },
  };
}

/**
 * The `cloud-hypervisor` runtime when the helper has root's `cloud-hypervisor` binary (its `ch.*` ops answer; seed 000
 * §The runtimes: the binary on `PATH` turns the runtime on, no configuration key), else `undefined`: the helper
 * refuses every `ch.*` op "cloud-hypervisor is not installed on this host", and the runtime is neither run nor
 * advertised. A probe that fails otherwise keeps it on (retried each pass, like libvirt-kvm's).
 */
async function _chRuntime(
  ctx: WiringContext,
  snapshots: SnapshotStore,
  cpuModel: () => Promise<string>,
): Promise<ChRuntime | undefined> {
  const helper = helperOf(ctx);
  try {
    await helper.call("ch.state", { id: "bcd-probe" });
  } catch (e) {
    if (e instanceof HelperError && e.code === "failed" && e.detail.includes("cloud-hypervisor is not installed")) {
      ctx.log.info({}, "instances: the helper has no cloud-hypervisor binary; cloud-hypervisor stays off");
      return undefined;
    }
    if (!(e instanceof HelperError)) throw e;
    ctx.log.warn({ err: e.message }, "instances: ch.state failed at start; cloud-hypervisor stays on and retries");
  }
  ctx.log.info({ runtime: CH_RUNTIME }, "instances: runtime on");
  return new ChRuntime({ host: new HelperChHost(helper), dataDir: ctx.dataDir, snapshots, cpuModel, log: ctx.log });
}

const _chSnapshotsByRuntime = new WeakMap<ChRuntime, ChSnapshots>();

/** The runtime's snapshot taker (one per runtime). */
function _chSnapshots(
  ctx: WiringContext,
  ch: ChRuntime,
  cpuModel: () => Promise<string>,
  hasWritableVolume: (id: string) => boolean,
): ChSnapshots {
  let s = _chSnapshotsByRuntime.get(ch);
  if (!s) {
    s = new ChSnapshots({ runtime: ch, dataDir: ctx.dataDir, cpuModel, hasWritableVolume, log: ctx.log });
    _chSnapshotsByRuntime.set(ch, s);
  }
  return s;
}

/** A host whose only hypervisor is cloud-hypervisor: its converger with bcd's network rules, as libvirt-kvm's. */
async function _chOnly(
  ctx: WiringContext,
  peers: InstancePeers,
  ch: ChRuntime,
  plugins: Awaited<ReturnType<typeof pluginRuntimes>>,
  snapshots: SnapshotStore,
  cpuModel: () => Promise<string>,
): Promise<InstanceWiring> {
  const helper = helperOf(ctx);
  const removed = [...await cleanStaging(snapshotsDir(ctx.dataDir)), ...await cleanStaging(`${ch.dir}/instances`)];
  if (removed.length > 0) ctx.log.info({ removed }, "instances: snapshot stages a crash left behind removed");
  const net = new NodeNetwork(new HelperNft(helper), ctx.log);
  const rebinder = _rebinder(ctx, peers, [ch]);
  const volumes = new VolumeKeeper(new FileVolumeStore({ dir: volumesDir(ctx.dataDir), log: ctx.log }), ctx.log);
  const converger = new InstancesConverger([ch, ...plugins], {
    rebinder,
    volumes,
    memory: new HelperHostMemory(helper),
    network: net.rules,
    snapshots,
    secrets: peers.secrets,
    holdsCommittedBytes: peers.holdsCommittedBytes,
    wake: peers.wake,
  });
  const writable = (id: string) => (converger.specOf(id)?.volumes ?? []).some((v) => !v.read_only);
  _snapshotsByCtx.set(ctx, _chSnapshots(ctx, ch, cpuModel, writable));
  const balloons = _balloonLoop(ctx, converger, [ch]);
  const network = await net.prepare();
  net.start();
  return {
    converger,
    capabilities: ["instance.placement", "instance.volumes", ...network],
    balloons: () => balloons.reclaimed(),
    stop: async () => {
      net.stop();
      await balloons.stop();
      await rebinder.stop();
    },
  };
}

/**
 * Memory ballooning (000 §Memory ballooning): every 30 s on the host's readings through the helper, over the balloon
 * verbs of `runtimes` (`libvirt-kvm`'s and `cloud-hypervisor`'s; a plugin runtime has none and is never ballooned).
 */
function _balloonLoop(
  ctx: WiringContext,
  converger: InstancesConverger,
  runtimes: readonly (LibvirtRuntime | ChRuntime)[],
): BalloonLoop {
  const loop = new BalloonLoop({
    pressure: new HelperMemoryPressure(helperOf(ctx)),
    candidates: () => converger.balloonCandidates(),
    port: (name) => runtimes.find((r) => r.name === name),
    floorPercent: ctx.config.instances.balloonFloorPercent,
    clock: realClock,
    log: ctx.log,
  });
  loop.start();
  return loop;
}

/**
 * Identity rebind (000 §Identity rebind): `libvirt-kvm` and `cloud-hypervisor` are rebinders (their `rebind`); a
 * runtime plugin is not.
 */
function _rebinder(ctx: WiringContext, peers: InstancePeers, runtimes: readonly (LibvirtRuntime | ChRuntime)[]) {
  return new IdentityRebinder({
    store: new ReboundFile(ctx.dataDir),
    secrets: peers.secrets,
    runtime: (name) => runtimes.find((r) => r.name === name),
    clock: realClock,
    log: ctx.log,
    wake: peers.wake,
  });
}

/** The `node` role's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = {
  ...agentCommands({
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
      _host(ctx, peers),
      new AccessConverger({ host: new HelperAccessHost(helperOf(ctx)), nodeId: ctx.identity.nodeId, jwks: _jwks(ctx) }),
      daemonConverger(ctx),
    ],
    onWelcome: confirmRelease,
    instanceConverger: _instances,
    tunnels: (ctx, agent) =>
      new Tunnels({
        nodeId: ctx.identity.nodeId,
        jwks: _jwks(ctx),
        ledger: ctx.journal,
        dialer: new InstanceDialer({ instances: agent.instances }),
        serverNow: agent.serverNow,
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
        instanceSnapshotHandler({ snapshotter: () => _snapshotsByCtx.get(ctx), uploader: new HttpsUploader() }),
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
  }),
  image: IMAGE_COMMAND,
  journal: JOURNAL_COMMAND,
  doctor: doctorCommand("node", "/var/lib/bcd"),
};

if (import.meta.main) {
  Deno.exit(await runCli("node", Deno.args, COMMANDS));
}
