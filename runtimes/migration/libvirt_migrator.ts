/**
 * `instance.migrate` on the `libvirt-kvm` runtime (issue 21): the orchestrator ({@link migrate}) over the helper's
 * `libvirt.*` ops and the instance's `org.bcd.turns` channel (`GUEST_CHANNELS`: a unix socket in the instance's
 * directory, proven with the instance's channel key). On one host a second QEMU process of the same domain stands in
 * for the target host: `snapshot` is `libvirt.save` (the memory state to `instances/<id>/memory.save`, a path root
 * builds; the source QEMU ends), `restoreTarget` and `restoreSource` are `libvirt.restore` of the same state (root
 * renders the XML from the domain's plan), `discardTarget` is `libvirt.destroy`, `cleanup` removes the state (it holds
 * the guest's memory, and so any secret in it).
 *
 * ## The phase journal and crash recovery
 *
 * Before each host action the move writes its phase durably to `instances/<id>/migration.json` (temp file, fsync,
 * rename, directory fsync); the record goes once the move ended. A node that died mid-move finds the record at its
 * next start, before the instances converger's first pass, and {@link recoverMigrations} resolves each to exactly one
 * running instance (there is one domain, so never two):
 *
 * | journaled phase | domain running | domain stopped, state saved | domain stopped, no state |
 * | --- | --- | --- | --- |
 * | `Draining` (no snapshot began) | DrainCancel: the gate reopens on the source | (cannot happen: start it) | start it (the converger would) |
 * | `Snapshotting` | the save never finished: DrainCancel | resume on the source: restore, prove the next epoch | start it |
 * | `Transferring`, `Restoring` (before cut-over) | the target runs: prove the next epoch (`Resumed`), drop the state | resume on the source: restore, prove the next epoch, drop the state | start it |
 * | `Cleanup` (after cut-over) | finish the cleanup: drop the state | restore, prove the next epoch, drop the state | start it |
 *
 * A guest channel that does not answer during recovery is logged; the instance's state is resolved regardless. The
 * command itself is not retry-safe: the journal settles it `FAILED interrupted` and nothing starts it over.
 *
 * ## Hanging up before the save
 *
 * A guest sees no connections on virtio-serial, only its port's host side going away; a guest saved while its port
 * looked connected may take the restoring host for the old, authenticated connection and never greet it (the real-VM
 * suite saw it). So `snapshot` closes the source's channel and gives the guest {@link LibvirtMigratorOptions.hangupGraceMs}
 * (2 s; the guest polls its port every 200 ms) on the injected clock before it saves: the guest sends nothing the
 * host could wait on instead.
 *
 * @module
 */
import {
  GUEST_CHANNELS,
  type HostOutcome,
  type LibvirtHostPort,
  MEMORY_STATE_FILE,
} from "../../core/converge/instances/domain_plan.ts";
import {
  type InstanceMigrator,
  MigrateRefused,
  type MigrateSummary,
} from "../../core/commands/kind_handlers/instance_migrate.ts";
import { type Clock, realClock } from "../../core/clock.ts";
import type { Logger } from "../../core/log/mod.ts";
import { type Phase, phaseGauge } from "../../core/migration/mod.ts";
import type { ChannelKey } from "../../core/turns/auth.ts";
import { atomicWrite, removeDurably } from "../cdi/atomic_write.ts";
import { connectTurnsUnix } from "../guest/turns_connect.ts";
import type { TurnsClient } from "../guest/turns_client.ts";
import { readChannelKey } from "../libvirt/channel_key.ts";
import { migrate, type MigrationHost } from "./orchestrator.ts";

/** The phase record of a move in progress, inside the instance's directory. */
export const MIGRATION_RECORD = "migration.json";

/** The `org.bcd.turns` socket's file name. */
const TURNS_SOCKET = GUEST_CHANNELS.find((c) => c.name === "org.bcd.turns")!.socket;

/** The phases the journal records (each written before its host action). */
export type JournaledPhase = "Draining" | "Snapshotting" | "Transferring" | "Restoring" | "Cleanup";

/** Connects to an instance's turn channel and proves its key (`restore`: claim the next restore epoch). */
export type TurnsConnector = (socket: string, o: { key: ChannelKey; restore: boolean }) => Promise<TurnsClient>;

/** Options of {@link LibvirtMigrator} and {@link recoverMigrations}. */
export interface LibvirtMigratorOptions {
  readonly host: Pick<LibvirtHostPort, "list" | "save" | "restore" | "destroy" | "start">;
  /** The instance's directory (`<data dir>/libvirt/instances/<id>`). */
  readonly instanceDir: (id: string) => string;
  /** Default: {@link connectTurnsUnix} with a 2-minute Hello wait. */
  readonly connect?: TurnsConnector;
  readonly clock?: Pick<Clock, "sleep">;
  /** How long the guest gets to see its port's host side go away before the save (2 s). */
  readonly hangupGraceMs?: number;
  readonly log: Logger;
  /** Every phase as it is entered, with its gauge value (for `/metrics`). */
  readonly onPhase?: (id: string, phase: Phase, gauge: number) => void;
}

function _check(o: HostOutcome, what: string): void {
  if (o.refused) throw new Error(`${what} refused (${o.refused.reason}): ${o.refused.message}`);
}

async function _exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

function _connector(o: LibvirtMigratorOptions): TurnsConnector {
  return o.connect ??
    ((socket, c) =>
      connectTurnsUnix(socket, { logger: o.log, channelKey: c.key, restore: c.restore, helloTimeoutMs: 120_000 }));
}

async function _journal(dir: string, migrationId: string, phase: JournaledPhase): Promise<void> {
  await atomicWrite(`${dir}/${MIGRATION_RECORD}`, JSON.stringify({ migrationId, phase }) + "\n", 0o600);
}

/** The node's migrator of libvirt instances. */
export class LibvirtMigrator implements InstanceMigrator {
  readonly #o: LibvirtMigratorOptions;
  constructor(o: LibvirtMigratorOptions) {
    this.#o = o;
  }

  async migrate(
    id: string,
    m: { readonly migrationId: string; readonly drainDeadlineMs: number; readonly signal: AbortSignal },
  ): Promise<MigrateSummary> {
    const o = this.#o;
    const dir = o.instanceDir(id);
    const d = (await o.host.list()).find((x) => x.name === id);
    if (!d || !d.plan) throw new MigrateRefused("no-instance", `no domain of this node is instance ${id}`);
    if (d.state !== "running") throw new MigrateRefused("not-running", `instance ${id} is ${d.state}, not running`);
    const key = await readChannelKey(dir);
    const socket = `${dir}/${TURNS_SOCKET}`;
    if (key === undefined || !(await _exists(socket))) {
      throw new MigrateRefused("no-channel", `instance ${id} has no guest turn channel (no channel key or socket)`);
    }
    const connect = _connector(o);
    let source: TurnsClient;
    try {
      source = await connect(socket, { key, restore: false });
    } catch (e) {
      throw new MigrateRefused("no-channel", `instance ${id}'s turn channel did not answer: ${(e as Error).message}`, {
        cause: e,
      });
    }
    const state = `${dir}/${MEMORY_STATE_FILE}`;
    const journal = (p: JournaledPhase) => _journal(dir, m.migrationId, p);
    const clock = o.clock ?? realClock;
    const host: MigrationHost = {
      snapshot: async () => {
        await journal("Snapshotting");
        source.close();
        await clock.sleep(o.hangupGraceMs ?? 2_000);
        _check(await o.host.save(id), "libvirt.save");
      },
      transfer: () => journal("Transferring"), // one host: the state stays where it is
      restoreTarget: async () => {
        await journal("Restoring");
        _check(await o.host.restore(id, false), "libvirt.restore (target)");
      },
      discardTarget: async () => _check(await o.host.destroy(id), "libvirt.destroy (target)"),
      restoreSource: async () => _check(await o.host.restore(id, false), "libvirt.restore (source)"),
      cleanup: async () => {
        await journal("Cleanup");
        await removeDurably(state);
      },
    };
    await journal("Draining");
    const r = await migrate({
      migrationId: m.migrationId,
      source,
      host,
      channels: {
        target: () => connect(socket, { key, restore: true }),
        sourceRestored: () => connect(socket, { key, restore: true }),
      },
      drainDeadlineMs: m.drainDeadlineMs,
      log: o.log,
      onPhase: (p, g) => o.onPhase?.(id, p, g),
    }).catch((e) => {
      o.onPhase?.(id, "Stable", phaseGauge("Stable")); // a host error the orchestrator did not absorb ends the move too
      throw e;
    });
    r.channel?.close();
    if (r.outcome !== "failed") {
      // The instance runs (on the target, or again on the source): its state and the record go. A failed move keeps
      // both, so the next start's recovery tries once more (the instance runs nowhere until then).
      await removeDurably(state);
      await removeDurably(`${dir}/${MIGRATION_RECORD}`);
    }
    return { outcome: r.outcome, reason: r.reason, steps: r.steps, cleanupFailed: r.cleanupFailed };
  }
}

/** What recovery did for one instance. */
export interface Recovered {
  readonly id: string;
  readonly phase: JournaledPhase;
  /** The actions taken, in order (`drain-cancel`, `restore`, `resumed`, `start`, `drop-state`). */
  readonly actions: readonly string[];
}

/**
 * Resolves every move a crash interrupted (the instances under `instancesDir` with a {@link MIGRATION_RECORD}) to
 * exactly one running instance, as the table in this module's doc says. Run once at start, before the instances
 * converger's first pass (whose start would otherwise restore a left-over state on its own).
 */
export async function recoverMigrations(instancesDir: string, o: LibvirtMigratorOptions): Promise<Recovered[]> {
  const out: Recovered[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(instancesDir));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return out;
    throw e;
  }
  for (const e of entries.filter((e) => e.isDirectory).sort((a, b) => a.name.localeCompare(b.name))) {
    const dir = `${instancesDir}/${e.name}`;
    let text: string;
    try {
      text = await Deno.readTextFile(`${dir}/${MIGRATION_RECORD}`);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) continue;
      throw err;
    }
    out.push(await _recoverOne(e.name, dir, _phaseOf(text), o));
  }
  return out;
}

const PHASES: readonly JournaledPhase[] = ["Draining", "Snapshotting", "Transferring", "Restoring", "Cleanup"];

function _phaseOf(text: string): JournaledPhase {
  let p: unknown;
  try {
    p = (JSON.parse(text) as { phase?: unknown }).phase;
  } catch (e) {
    if (!(e instanceof SyntaxError)) throw e;
    return "Snapshotting"; // a torn record cannot be (atomicWrite); read as the phase that checks everything
  }
  return PHASES.includes(p as JournaledPhase) ? p as JournaledPhase : "Snapshotting";
}

async function _recoverOne(
  id: string,
  dir: string,
  phase: JournaledPhase,
  o: LibvirtMigratorOptions,
): Promise<Recovered> {
  const actions: string[] = [];
  const state = `${dir}/${MEMORY_STATE_FILE}`;
  const d = (await o.host.list()).find((x) => x.name === id);
  const key = await readChannelKey(dir);
  const socket = `${dir}/${TURNS_SOCKET}`;
  const connect = _connector(o);
  const guest = async (what: string, restore: boolean, then?: (c: TurnsClient) => Promise<void>) => {
    if (key === undefined) return;
    try {
      const c = await connect(socket, { key, restore });
      await then?.(c);
      c.close();
      actions.push(what);
    } catch (e) {
      o.log.warn({ instance: id, phase, err: (e as Error).message }, `migration recovery: ${what} failed`);
    }
  };
  const hasState = await _exists(state);
  if (d && d.plan) {
    if (d.state === "running") {
      if (phase === "Draining" || phase === "Snapshotting") {
        await guest("drain-cancel", false, (c) => c.send({ type: "DrainCancel" }));
      } else if (phase === "Transferring" || phase === "Restoring") {
        await guest("resumed", true);
      }
    } else if (d.state === "stopped" && hasState && phase !== "Draining") {
      _check(await o.host.restore(id, false), "libvirt.restore (recovery)");
      actions.push("restore");
      await guest("resumed", true);
    } else if (d.state === "stopped") {
      _check(await o.host.start(id, false), "libvirt.start (recovery)");
      actions.push("start");
    }
  }
  if (hasState) {
    await removeDurably(state);
    actions.push("drop-state");
  }
  await removeDurably(`${dir}/${MIGRATION_RECORD}`);
  o.log.info({ instance: id, phase, actions }, "migration recovery: resolved to one running instance");
  return { id, phase, actions };
}
