/**
 * The wiring of the node's built-in runtimes, loaded by `roles/node_instances.ts` only when its probes found one: the
 * runtimes (`libvirt-kvm`, `cloud-hypervisor`) and the parts every runtime gets (volume keeper, rebinder, balloon loop,
 * network rules, crash leftovers, snapshot taker), plus what only `libvirt-kvm` has (migration, fleet config). A host
 * without a runtime never loads this module or the ~60 it imports (issue 24).
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
import type { PluginRuntime } from "../core/plugins/mod.ts";
import { HelperLibvirtHost } from "../runtimes/libvirt/helper_port.ts";
import { LibvirtRuntime } from "../runtimes/libvirt/libvirt_runtime.ts";
import { ChRuntime } from "../runtimes/cloudhypervisor/ch_runtime.ts";
import { HelperChHost } from "../runtimes/cloudhypervisor/helper_port.ts";
import { ChSnapshots } from "../runtimes/cloudhypervisor/ch_snapshots.ts";
import { SnapshotRouter } from "../runtimes/snapshot_router.ts";
import { HelperNft } from "../runtimes/helper/nft_port.ts";
import { NodeNetwork } from "../runtimes/nft/node_network.ts";
import { SnapshotStore } from "../runtimes/libvirt/snapshot_store.ts";
import { cleanStaging, LibvirtSnapshots, snapshotsDir } from "../runtimes/libvirt/snapshots.ts";
import {
  LibvirtMigrator,
  type LibvirtMigratorOptions,
  recoverMigrations,
} from "../runtimes/migration/libvirt_migrator.ts";
import { MigrationPhaseBoard } from "../runtimes/migration/phase_board.ts";
import { CH_RUNTIME } from "../runtimes/runtime_names.ts";
import { helperOf, type InstancePeers, type InstanceWiring, type WiringContext } from "./_agent_cli.ts";
import type { InstanceSnapshotter } from "../core/commands/kind_handlers/instance_snapshot.ts";
import type { HelperClient } from "../runtimes/helper/client.ts";
import type { Logger } from "../core/log/mod.ts";

/** The `libvirt-kvm` runtime and its helper port, when found. */
interface _Found {
  readonly libvirt?: { readonly runtime: LibvirtRuntime; readonly host: HelperLibvirtHost };
}

/** A runtime the node runs itself (a plugin runtime is not one: no rebind, no balloon, no volumes of its own). */
export type HostRuntime = LibvirtRuntime | ChRuntime;

/** What the probes found: the built-in runtimes this host runs. */
export interface RuntimesFound {
  readonly libvirt: boolean;
  readonly ch: boolean;
}

/** What `nodeInstances` (`roles/node_instances.ts`) wired, beyond what the agent takes. */
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

/** bcd's nftables tables, made sure of, and the `Hello` capabilities that allows. */
export interface PreparedNetwork {
  readonly net: NodeNetwork;
  readonly capabilities: readonly string[];
}

/**
 * Makes sure of bcd's nftables tables through the helper (`NodeNetwork.prepare`): needs nothing the journal holds, so
 * the daemon does it while the journal opens; the integrity timer starts with the wiring.
 */
export async function prepareNetwork(helper: HelperClient, log: Logger): Promise<PreparedNetwork> {
  const net = new NodeNetwork(new HelperNft(helper), log);
  return { net, capabilities: await net.prepare() };
}

/**
 * The runtimes {@link RuntimesFound} names (at least one) and their parts: see `roles/node_instances.ts` for the table.
 * `plugins` are the helper's runtime plugins, converged after the built-in runtimes; `network` is
 * {@link prepareNetwork}'s.
 */
export async function wireRuntimes(
  ctx: WiringContext,
  peers: InstancePeers,
  found: RuntimesFound,
  plugins: readonly PluginRuntime[],
  network: PreparedNetwork,
  clock: Pick<Clock, "monotonic" | "setTimer"> = realClock,
): Promise<NodeInstances> {
  const helper = helperOf(ctx);
  const memory = new HelperHostMemory(helper);
  const cpuModel = _cpuModel(ctx);
  const snapshots = new SnapshotStore({ dir: snapshotsDir(ctx.dataDir), log: ctx.log });
  const ch = found.ch
    ? new ChRuntime({ host: new HelperChHost(helper), dataDir: ctx.dataDir, snapshots, cpuModel, log: ctx.log })
    : undefined;
  const lvHost = found.libvirt ? new HelperLibvirtHost(helper) : undefined;
  const lv = lvHost && {
    runtime: new LibvirtRuntime({ host: lvHost, dataDir: ctx.dataDir, snapshots, cpuModel, log: ctx.log }),
    host: lvHost,
  };
  const runtimes: HostRuntime[] = [...(lv ? [lv.runtime] : []), ...(ch ? [ch] : [])];
  const stages = [
    snapshotsDir(ctx.dataDir),
    ...(lv ? [`${ctx.dataDir}/libvirt/instances`] : []),
    ...(ch ? [`${ch.dir}/instances`] : []),
  ];
  const removed = (await Promise.all(stages.map((d) => cleanStaging(d)))).flat();
  if (removed.length > 0) ctx.log.info({ removed }, "instances: snapshot stages a crash left behind removed");
  const { net } = network;
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
  net.start();
  const libvirtOnly = lv ? await _libvirtParts(ctx, lv) : undefined;
  return {
    converger,
    capabilities: ["instance.placement", "instance.volumes", ...network.capabilities],
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
