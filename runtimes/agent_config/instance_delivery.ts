/**
 * Fleet config (seed 004) for the node's libvirt instances: one {@link ConfigRunner} per running instance that has a
 * control-framing channel (`org.bcd.framing`, a socket in the instance's directory) and a channel key. Each
 * {@link InstanceConfigDelivery.pass} provisions the instances not yet provisioned (attach with the key, fetch, check,
 * push) and forgets the ones that stopped or left; {@link InstanceConfigDelivery.refreshAll} is the ConfigVersion
 * publish: every provisioned instance refreshes by version (`if_version`), with its codes mapped as the Runner maps
 * them (`unimplemented` is "guest image too old"). {@link InstanceConfigDelivery.run} does both: a pass, then a watch
 * of the source for the next version (bounded, so a new instance waits at most `passEveryMs`), a refresh when it
 * moved.
 *
 * Judgement calls: a failed provision is logged (`agent_config_provision_failed`, the Runner's code) and tried again
 * next pass; bcd does not tear the VM down as the seed's Runner does, since the instances converger owns the VM's
 * life. The reload after a refresh has nothing to restart: the guest's agent reads its tree through `current/`.
 *
 * @module
 */
import { ConfigDeliveryError, ConfigRunner, type ConfigSource } from "../../core/agent_config/mod.ts";
import { type Clock, realClock } from "../../core/clock.ts";
import { GUEST_CHANNELS } from "../../core/converge/instances/domain_plan.ts";
import type { Logger } from "../../core/log/mod.ts";
import type { ChannelKey } from "../../core/turns/auth.ts";
import { FramingClient } from "../guest/framing_client.ts";
import { readChannelKey } from "../libvirt/channel_key.ts";
import { FramingConfigPort } from "./framing_port.ts";

/** The `org.bcd.framing` socket's file name. */
const FRAMING_SOCKET = GUEST_CHANNELS.find((c) => c.name === "org.bcd.framing")!.socket;

/** A source that also announces new versions (the testbed's and the control plane's `watch`). */
export interface WatchedConfigSource extends ConfigSource {
  /** The next version after `after`; "" when aborted. */
  watch(after: string, signal: AbortSignal): Promise<string>;
}

/** Options of {@link InstanceConfigDelivery}. */
export interface InstanceConfigDeliveryOptions {
  readonly source: WatchedConfigSource;
  /** The instances running now. */
  readonly running: () => Promise<readonly string[]>;
  readonly instanceDir: (id: string) => string;
  /** Attaches to a framing socket proving the key (default: a unix socket, 60 s per request). */
  readonly connect?: (socket: string, key: ChannelKey) => Promise<FramingClient>;
  readonly log: Logger;
  readonly clock?: Pick<Clock, "setTimer">;
  /** The longest wait between passes (30 s). */
  readonly passEveryMs?: number;
}

interface _Held {
  readonly runner: ConfigRunner;
  readonly client: FramingClient;
}

async function _connectUnix(socket: string, key: ChannelKey): Promise<FramingClient> {
  const conn = await Deno.connect({ transport: "unix", path: socket });
  return await FramingClient.attach(conn, { channelKey: key, requestTimeoutMs: 60_000 });
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

/** Fleet config delivery to the node's instances. */
export class InstanceConfigDelivery {
  readonly #o: InstanceConfigDeliveryOptions;
  readonly #held = new Map<string, _Held>();

  constructor(o: InstanceConfigDeliveryOptions) {
    this.#o = o;
  }

  /** The version each provisioned instance holds. */
  get versions(): ReadonlyMap<string, string | null> {
    return new Map([...this.#held].map(([id, h]) => [id, h.runner.lastVersion]));
  }

  /** Provisions the running instances with a framing channel that are not provisioned; forgets the rest. */
  async pass(): Promise<void> {
    const running = new Set(await this.#o.running());
    for (const [id, h] of this.#held) {
      if (!running.has(id) || h.client.ended !== null) {
        h.client.close();
        this.#held.delete(id);
      }
    }
    for (const id of running) {
      if (this.#held.has(id)) continue;
      const dir = this.#o.instanceDir(id);
      const key = await readChannelKey(dir);
      const socket = `${dir}/${FRAMING_SOCKET}`;
      if (key === undefined || !(await _exists(socket))) continue;
      let client: FramingClient | undefined;
      try {
        client = await (this.#o.connect ?? _connectUnix)(socket, key);
        const runner = new ConfigRunner({
          source: this.#o.source,
          guest: new FramingConfigPort(client),
          log: this.#o.log,
          reload: () => Promise.resolve(), // the guest's agent reads its tree through current/
        });
        const version = await runner.provision();
        this.#held.set(id, { runner, client });
        this.#o.log.info({ instance: id, version }, "agent config: instance provisioned");
      } catch (e) {
        client?.close();
        const code = e instanceof ConfigDeliveryError ? e.code : "channel";
        this.#o.log.warn(
          { event: "agent_config_provision_failed", instance: id, code, err: (e as Error).message },
          "agent config: provision failed; tried again next pass",
        );
      }
    }
  }

  /** A ConfigVersion publish: every provisioned instance refreshes; a failure keeps its old version (logged). */
  async refreshAll(): Promise<void> {
    for (const [id, h] of this.#held) {
      try {
        await h.runner.refresh();
      } catch (e) {
        const code = e instanceof ConfigDeliveryError ? e.code : "channel";
        this.#o.log.warn(
          { event: "agent_config_refresh_failed", instance: id, code, err: (e as Error).message },
          "agent config: refresh failed; the old version stays",
        );
        if (h.client.ended !== null) this.#held.delete(id);
      }
    }
  }

  /** Passes and refreshes until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    let seen = "";
    while (!signal.aborted) {
      await this.pass();
      const bounded = new AbortController();
      const onAbort = () => bounded.abort();
      signal.addEventListener("abort", onAbort, { once: true });
      const timer = (this.#o.clock ?? realClock).setTimer(this.#o.passEveryMs ?? 30_000, () => bounded.abort());
      let next = "";
      try {
        next = await this.#o.source.watch(seen, bounded.signal);
      } catch (e) {
        if (!(e instanceof ConfigDeliveryError)) throw e;
        this.#o.log.warn({ err: e.message }, "agent config: watch failed; next pass");
      } finally {
        timer.cancel();
        signal.removeEventListener("abort", onAbort);
      }
      if (next !== "" && next !== seen) {
        seen = next;
        await this.refreshAll();
      }
    }
    for (const h of this.#held.values()) h.client.close();
    this.#held.clear();
  }
}
