/**
 * The node's `instances` wiring, one function for every runtime mix (000 §The runtimes): `libvirt-kvm` when the helper
 * has virsh on its PATH (its `libvirt.list` answers), `cloud-hypervisor` when it has that binary (its `ch.*` ops
 * answer), both when it has both, no runtime otherwise (a non-empty section then fails `this host runs no instance
 * runtime`). Whatever the mix, the host's runtimes get the same parts:
 *
 * | part | what |
 * | --- | --- |
 * | converger | the runtimes, then the plugin runtimes; starts admitted against the host's memory (through the helper), so `Hello` advertises `instance.placement` |
 * | volume keeper | 000 §Persistent volumes: `<data dir>/volumes`, so `Hello` advertises `instance.volumes` and every status report carries `volume_storage` |
 * | rebinder | 000 §Identity rebind, over every runtime with `rebind` |
 * | balloon loop | 000 §Memory ballooning, every 30 s over every runtime with `readBalloon`/`setBalloon` |
 * | network rules | bcd's nftables tables made sure of before the session starts; `instance.network-policy` and `instance.ssh-host-only` advertised only when they loaded; the integrity check on a timer |
 * | crash leftovers | the snapshot stages of the store and of each runtime's instance directory removed at start |
 * | `instance.snapshot` | the runtime's snapshot taker; with both, a router asking cloud-hypervisor first |
 * | stop | fleet config, network timer, balloon loop, rebinder — all before the helper closes |
 *
 * Only `libvirt-kvm` has `instance.migrate` (its migrator, with the moves a crash interrupted resolved first) and the
 * fleet config delivery (seed 004; it lists the running domains through virsh). A host with no runtime gets the
 * converger over its plugins alone: no capability, no volume store, so no `volume_storage`.
 *
 * @module
 */
import { VolumeKeeper } from "../core/volumes/keeper.ts";
import { FileVolumeStore, volumesDir } from "../runtimes/volumes/file_store.ts";
import { HelperHostInventory, HelperHostMemory, HelperMemoryPressure } from "../runtimes/helper/ports.ts";
import { InstancesConverger } from "../core/converge/instances/mod.ts";
import { BalloonLoop } from "../core/balloon/mod.ts";
import { IdentityRebinder } from "../core/converge/instances/identity_rebind.ts";
import { ReboundFile } from "../core/rebind/mod.ts";
import { type Clock, realClock } from "../core/clock.ts";
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
import type { InstanceSnapshotter } from "../core/commands/kind_handlers/instance_snapshot.ts";
import {
  LibvirtMigrator,
  type LibvirtMigratorOptions,
  recoverMigrations,
} from "../runtimes/migration/libvirt_migrator.ts";
import { MigrationPhaseBoard } from "../runtimes/migration/phase_board.ts";
import { helperOf, type InstancePeers, type InstanceWiring, type WiringContext } from "./_agent_cli.ts";
import { pluginRuntimes } from "./_plugins.ts";

/** A runtime the node runs itself (a plugin runtime is not one: no rebind, no balloon, no volumes of its own). */
export type HostRuntime = LibvirtRuntime | ChRuntime;

/** Options of {@link nodeInstances}. */
export interface NodeInstancesOptions {
  /** The clock the balloon loop and the rebinder's retries run on (default the real clock). */
  readonly clock?: Pick<Clock, "monotonic" | "setTimer">;
}

/** What {@link nodeInstances} wired, beyond what the agent takes. */
export interface NodeInstances extends InstanceWiring {
  /** The host's runtimes, in the converger's order (`libvirt-kvm`, then `cloud-hypervisor`). */
  readonly runtimes: readonly HostRuntime[];
  /** `instance.snapshot`'s taker, with a runtime. */
  readonly snapshotter?: InstanceSnapshotter;
  /** `instance.migrate`'s mover, with `libvirt-kvm`. */
  readonly migrator?: LibvirtMigrator;
  /** The identity rebinder and the balloon loop, with a runtime. */
  readonly rebinder?: IdentityRebinder;
  readonly balloonLoop?: BalloonLoop;
}

/** The host's runtimes, probed through the helper (`cloud-hypervisor` first, as before), and their wiring. */
export async function nodeInstances(
  ctx: WiringContext,
  peers: InstancePeers,
  opts: NodeInstancesOptions = {},
): Promise<NodeInstances> {
  const cpuModel = _cpuModel(ctx);
  const snapshots = new SnapshotStore({ dir: snapshotsDir(ctx.dataDir), log: ctx.log });
  const ch = await _chRuntime(ctx, snapshots, cpuModel);
  const libvirt = await _libvirtRuntime(ctx, snapshots, cpuModel);
  return await _wire(ctx, peers, { libvirt, ch, snapshots, cpuModel }, opts.clock ?? realClock);
}

interface _Found {
  readonly libvirt?: { readonly runtime: LibvirtRuntime; readonly host: HelperLibvirtHost };
  readonly ch?: ChRuntime;
  readonly snapshots: SnapshotStore;
  readonly cpuModel: () => Promise<string>;
}

/** One wiring for every mix of {@link _Found}. */
async function _wire(
  ctx: WiringContext,
  peers: InstancePeers,
  found: _Found,
  clock: Pick<Clock, "monotonic" | "setTimer">,
): Promise<NodeInstances> {
  const helper = helperOf(ctx);
  const memory = new HelperHostMemory(helper);
  const plugins = await pluginRuntimes(ctx, ["libvirt-kvm", CH_RUNTIME]);
  const { libvirt: lv, ch, snapshots, cpuModel } = found;
  const runtimes: HostRuntime[] = [...(lv ? [lv.runtime] : []), ...(ch ? [ch] : [])];
  if (runtimes.length === 0) {
    ctx.log.info({}, "instances: the helper has neither virsh nor cloud-hypervisor; no instance runtime");
    return { converger: new InstancesConverger(plugins, { memory }), capabilities: [], runtimes };
  }
  const stages = [
    snapshotsDir(ctx.dataDir),
    ...(lv ? [`${ctx.dataDir}/libvirt/instances`] : []),
    ...(ch ? [`${ch.dir}/instances`] : []),
  ];
  const removed = (await Promise.all(stages.map((d) => cleanStaging(d)))).flat();
  if (removed.length > 0) ctx.log.info({ removed }, "instances: snapshot stages a crash left behind removed");
  const net = new NodeNetwork(new HelperNft(helper), ctx.log);
  const volumes = new VolumeKeeper(new FileVolumeStore({ dir: volumesDir(ctx.dataDir), log: ctx.log }), ctx.log);
  const rebinder = new IdentityRebinder({
    store: new ReboundFile(ctx.dataDir),
    secrets: peers.secrets,
    runtime: (name) => runtimes.find((r) => r.name === name && "rebind" in r),
    clock,
    log: ctx.log,
    wake: peers.wake,
  });
  const converger = new InstancesConverger([...runtimes, ...plugins], {
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
  const chSnaps = ch &&
    new ChSnapshots({ runtime: ch, dataDir: ctx.dataDir, cpuModel, hasWritableVolume: writable, log: ctx.log });
  const lvSnaps = lv && new LibvirtSnapshots({
    runtime: lv.runtime,
    host: lv.host,
    dataDir: ctx.dataDir,
    cpuModel,
    hasWritableVolume: writable,
    log: ctx.log,
  });
  const snapshotter = chSnaps && lvSnaps
    ? new SnapshotRouter([
      { runtime: CH_RUNTIME, holds: (id) => chSnaps.holds(id), snapshotter: chSnaps },
      { runtime: lv!.runtime.name, holds: () => Promise.resolve(true), snapshotter: lvSnaps },
    ])
    : chSnaps ?? lvSnaps;
  const balloonLoop = new BalloonLoop({
    pressure: new HelperMemoryPressure(helper),
    candidates: () => converger.balloonCandidates(),
    port: (name) => runtimes.find((r) => r.name === name && "readBalloon" in r && "setBalloon" in r),
    floorPercent: ctx.config.instances.balloonFloorPercent,
    clock,
    log: ctx.log,
  });
  balloonLoop.start();
  const network = await net.prepare();
  net.start();
  const libvirtOnly = lv ? await _libvirtParts(ctx, lv) : undefined;
  return {
    converger,
    capabilities: ["instance.placement", "instance.volumes", ...network],
    runtimes,
    ...(snapshotter ? { snapshotter } : {}),
    ...(libvirtOnly ? { migrator: libvirtOnly.migrator, migrations: libvirtOnly.migrations } : {}),
    rebinder,
    balloonLoop,
    balloons: () => balloonLoop.reclaimed(),
    stop: async () => {
      libvirtOnly?.stop();
      net.stop();
      await balloonLoop.stop();
      await rebinder.stop();
    },
  };
}

/**
 * What only `libvirt-kvm` has: `instance.migrate` (moves a crash interrupted are resolved before the converger's first
 * pass, each to exactly one running instance; runtimes/migration/libvirt_migrator.ts) and fleet config (seed 004) to
 * the instances with a framing channel, when the control plane's endpoint is set.
 */
async function _libvirtParts(
  ctx: WiringContext,
  lv: NonNullable<_Found["libvirt"]>,
): Promise<{ migrator: LibvirtMigrator; migrations: NonNullable<InstanceWiring["migrations"]>; stop(): void }> {
  const { runtime: rt, host } = lv;
  const moves = new MigrationPhaseBoard();
  const migration: LibvirtMigratorOptions = {
    host,
    instanceDir: (id) => rt.instanceDir(id),
    log: ctx.log,
    onPhase: (id, phase, gauge) => moves.record(id, phase, gauge),
  };
  const recovered = await recoverMigrations(`${ctx.dataDir}/libvirt/instances`, migration);
  if (recovered.length > 0) ctx.log.warn({ recovered }, "instances: moves a crash interrupted were resolved");
  ctx.log.info({ runtime: rt.name }, "instances: runtime on");
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
  return { migrator: new LibvirtMigrator(migration), migrations: () => moves.moving(), stop: () => fleet.abort() };
}

/** The host CPU model from the helper's inventory, read once (memory snapshots record it and restores check it). */
function _cpuModel(ctx: WiringContext): () => Promise<string> {
  let model: Promise<string> | undefined;
  return () => model ??= new HelperHostInventory(helperOf(ctx)).read().then((inv) => inv.cpu?.model ?? "");
}

/**
 * `libvirt-kvm` when the helper has virsh (its `libvirt.list` answers), else `undefined`: the helper refuses every
 * `libvirt.*` op "libvirt is not installed on this host". A probe that fails otherwise keeps it on (retried each pass).
 */
async function _libvirtRuntime(
  ctx: WiringContext,
  snapshots: SnapshotStore,
  cpuModel: () => Promise<string>,
): Promise<_Found["libvirt"]> {
  const helper = helperOf(ctx);
  try {
    await helper.call("libvirt.list", {});
  } catch (e) {
    if (e instanceof HelperError && e.code === "failed" && e.detail.includes("libvirt is not installed")) {
      ctx.log.info({}, "instances: the helper has no virsh; libvirt-kvm stays off");
      return undefined;
    }
    if (!(e instanceof HelperError)) throw e;
    ctx.log.warn({ err: e.message }, "instances: libvirt.list failed at start; libvirt-kvm stays on and retries");
  }
  const host = new HelperLibvirtHost(helper);
  return { runtime: new LibvirtRuntime({ host, dataDir: ctx.dataDir, snapshots, cpuModel, log: ctx.log }), host };
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
