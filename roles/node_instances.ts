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
 * This file is the part every start loads: the two probes ({@link probeRuntimes}, sent together) and the converger
 * of a host without a runtime. The runtimes' code and the parts above (`roles/node_runtimes.ts`: libvirt,
 * cloud-hypervisor, migration, snapshots, volumes, nftables, balloon, rebind; about 60 modules) load only when a
 * probe finds a runtime. The daemon runs the probes, that load and the network rules' preparation
 * ({@link earlyInstances}) while its journal opens (issue 24).
 *
 * @module
 */
import { HelperHostMemory } from "../runtimes/helper/ports.ts";
import { lazyInstancesConverger } from "../core/converge/instances/lazy.ts";
import type { Clock } from "../core/clock.ts";
import { HelperError } from "../core/helper/mod.ts";
import type { Logger } from "../core/log/mod.ts";
import type { HelperClient } from "../runtimes/helper/client.ts";
import type { NodeInstances, PreparedNetwork, RuntimesFound } from "./node_runtimes.ts";

import { helperOf, type InstancePeers, type WiringContext } from "./_agent_cli.ts";
import { pluginRuntimes } from "./_plugins.ts";
import { CH_RUNTIME, LIBVIRT_RUNTIME } from "../runtimes/runtime_names.ts";

/** The runtimes' types live with their wiring; importing them loads none of it. */
export type { HostRuntime, NodeInstances, RuntimesFound } from "./node_runtimes.ts";

/**
 * What {@link earlyInstances} found and began before the journal is open: the probes' answers and, with a runtime,
 * the runtimes' code, loaded, and bcd's nftables tables made sure of (the `Hello` capabilities they allow).
 */
export interface InstancesEarly {
  readonly found: RuntimesFound;
  readonly runtimes?: {
    readonly module: typeof import("./node_runtimes.ts");
    readonly network: PreparedNetwork;
  };
}

/** Options of {@link nodeInstances}. */
export interface NodeInstancesOptions {
  /** The clock the balloon loop and the rebinder's retries run on (default the real clock). */
  readonly clock?: Pick<Clock, "monotonic" | "setTimer">;
  /** What {@link earlyInstances} found and began, when it ran earlier (the daemon's, while its journal opens). */
  readonly early?: InstancesEarly;
}

/**
 * The host's runtimes and their wiring, from what {@link earlyInstances} found and began
 * ({@link NodeInstancesOptions.early}, else run now).
 */
export async function nodeInstances(
  ctx: WiringContext,
  peers: InstancePeers,
  opts: NodeInstancesOptions = {},
): Promise<NodeInstances> {
  const { found, runtimes } = opts.early ?? await earlyInstances(helperOf(ctx), ctx.log);
  const plugins = await pluginRuntimes(ctx, [LIBVIRT_RUNTIME, CH_RUNTIME]);
  if (!runtimes) {
    ctx.log.info({}, "instances: the helper has neither virsh nor cloud-hypervisor; no instance runtime");
    const memory = new HelperHostMemory(helperOf(ctx));
    // The converger's code loads on the section's first pass (core/converge/instances/lazy.ts).
    const converger = lazyInstancesConverger(plugins.map((p) => p.name), async () => {
      const { InstancesConverger } = await import("../core/converge/instances/converger.ts");
      return new InstancesConverger(plugins, { memory });
    });
    return { converger, capabilities: [], runtimes: [] };
  }
  return await runtimes.module.wireRuntimes(ctx, peers, found, plugins, runtimes.network, opts.clock);
}

/**
 * What needs only the helper, done before the journal is open: the probes ({@link probeRuntimes}); with a runtime,
 * its code loads (`roles/node_runtimes.ts`) and bcd's nftables tables are made sure of, since `Hello` advertises
 * the network capabilities only when they loaded. A host without a runtime loads none of it.
 */
export async function earlyInstances(helper: HelperClient, log: Logger): Promise<InstancesEarly> {
  const found = await probeRuntimes(helper, log);
  if (!found.libvirt && !found.ch) return { found };
  const module = await import("./node_runtimes.ts");
  return { found, runtimes: { module, network: await module.prepareNetwork(helper, log) } };
}

/**
 * Asks the helper, both questions at once, which built-in runtimes this host has (`cloud-hypervisor`'s answer logged
 * first, as before): each op refused "… is not installed on this host" turns that runtime off; a probe that fails
 * otherwise keeps it on (retried each pass). Needs nothing but the helper: the daemon sends them while its journal
 * opens.
 */
export async function probeRuntimes(helper: HelperClient, log: Logger): Promise<RuntimesFound> {
  const [ch, libvirt] = await Promise.all([
    _probe(helper.call("ch.state", { id: "bcd-probe" }), "cloud-hypervisor is not installed"),
    _probe(helper.call("libvirt.list", {}), "libvirt is not installed"),
  ]);
  if (ch === "absent") log.info({}, "instances: the helper has no cloud-hypervisor binary; cloud-hypervisor stays off");
  if (ch instanceof HelperError) {
    log.warn({ err: ch.message }, "instances: ch.state failed at start; cloud-hypervisor stays on and retries");
  }
  if (ch !== "absent") log.info({ runtime: CH_RUNTIME }, "instances: runtime on");
  if (libvirt === "absent") log.info({}, "instances: the helper has no virsh; libvirt-kvm stays off");
  if (libvirt instanceof HelperError) {
    log.warn({ err: libvirt.message }, "instances: libvirt.list failed at start; libvirt-kvm stays on and retries");
  }
  return { libvirt: libvirt !== "absent", ch: ch !== "absent" };
}

/** One probe's answer: the runtime is there, absent (the helper's refusal names it), or the probe failed otherwise. */
async function _probe(call: Promise<unknown>, absent: string): Promise<"there" | "absent" | HelperError> {
  try {
    await call;
    return "there";
  } catch (e) {
    if (!(e instanceof HelperError)) throw e;
    return e.code === "failed" && e.detail.includes(absent) ? "absent" : e;
  }
}
