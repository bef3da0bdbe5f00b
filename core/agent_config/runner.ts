/**
 * The host Runner's config delivery to one guest (seed 004 §(d) Provision, §(e) refresh): fetch the bundle by version
 * from the control plane, check it on the host (the wire cap, the safety kernel and {@link BUNDLE_SCHEMA}: a bad
 * bundle costs no push), push it to the guest (kinds 32–35 of the framing), and on a refresh reload the agent.
 *
 * - `provision()`: fetch with no version; "" (the control plane has none) installs no tree; otherwise check and push,
 *   then remember the version. Any failure throws {@link ConfigDeliveryError} and leaves nothing remembered, so the
 *   caller fails Provision closed (the seed tears the VM down).
 * - `refresh()` (on a ConfigVersion publish): fetch with `ifVersion` = the remembered version; a version-only answer
 *   for that version means no push and no reload. Otherwise check, push, reload; the version advances only after the
 *   reload succeeded, so a failed push or reload is retried on the next signal (the install is idempotent per version).
 *
 * Ports, not tools: the source and the guest are interfaces (`runtimes/agent_config/` has the testbed's HTTP source
 * and the framing port), so this runs the same against fakes and real ones.
 *
 * @module
 */
import type { Logger } from "../log/mod.ts";
import { MAX_WIRE_BYTES, UnsafeBundle, walk } from "../images/mod.ts";
import { ConfigDeliveryError, guestInstallError } from "./errors.ts";
import { BUNDLE_SCHEMA, BundleSchemaError } from "./schema.ts";

/** What the control plane answered: a version and its bundle, or the version alone when it equals `ifVersion`. */
export interface FetchedBundle {
  /** The bundle's version (its content hash), or "" when the control plane has no config for this guest. */
  readonly version: string;
  /** The gzip-tar bytes; null when only the version came back (it equals `ifVersion`, or it is ""). */
  readonly tarball: Uint8Array | null;
}

/** The control plane's side (seed 004 `ConfigMaterializer.Fetch`). */
export interface ConfigSource {
  /** Throws {@link ConfigDeliveryError} `fetch-failed`. */
  fetch(ifVersion: string): Promise<FetchedBundle>;
}

/** A guest's refusal of an install, with its framing result code. */
export class GuestInstallRefused extends Error {
  override name = "GuestInstallRefused";
  constructor(readonly code: string, readonly problem: string) {
    super(`${code}: ${problem}`);
  }
}

/** The guest's side: one install over the framing. Throws {@link GuestInstallRefused}, or anything on a channel failure. */
export interface GuestConfigPort {
  install(version: string, tarball: Uint8Array): Promise<void>;
}

/** Options of {@link ConfigRunner}. */
export interface ConfigRunnerOptions {
  readonly source: ConfigSource;
  readonly guest: GuestConfigPort;
  /** Restarts the agent's session so it loads the new tree (the seed's reloadLocked); throws on failure. */
  readonly reload: () => Promise<void>;
  readonly log: Logger;
  /** The wire cap checked before the push (seed 004 `MaxWireBytes`). */
  readonly maxWireBytes?: number;
}

/** What a refresh did. */
export type RefreshResult = "unchanged" | "installed";

/** Config delivery to one guest. */
export class ConfigRunner {
  readonly #o: ConfigRunnerOptions;
  #last: string | null = null;
  #pushes = 0;
  #reloads = 0;

  constructor(opts: ConfigRunnerOptions) {
    this.#o = opts;
  }

  /** The version the guest holds and the agent runs with, or null before provision. */
  get lastVersion(): string | null {
    return this.#last;
  }
  /** How many bundles were pushed, and reloads done (tests and logs). */
  get counts(): { pushes: number; reloads: number } {
    return { pushes: this.#pushes, reloads: this.#reloads };
  }

  /** Provision: fetch, check, push; throws {@link ConfigDeliveryError} (fail closed). */
  async provision(): Promise<string> {
    const b = await this.#fetch("");
    if (b.version !== "") await this.#checkAndPush(b);
    this.#last = b.version;
    this.#o.log.info({ event: "agent_config_provisioned", version: b.version }, "agent config provisioned");
    return b.version;
  }

  /** Refresh on a ConfigVersion publish; throws {@link ConfigDeliveryError} and keeps the old version. */
  async refresh(): Promise<RefreshResult> {
    if (this.#last === null) throw new TypeError("refresh() before provision()");
    const b = await this.#fetch(this.#last);
    if (b.version === this.#last) {
      this.#o.log.info({ event: "agent_config_unchanged", version: b.version }, "agent config unchanged");
      return "unchanged";
    }
    if (b.version !== "") await this.#checkAndPush(b);
    try {
      await this.#o.reload();
    } catch (e) {
      throw new ConfigDeliveryError("reload-failed", `reload after installing ${b.version} failed: ${e}`, { cause: e });
    }
    this.#reloads++;
    const from = this.#last;
    this.#last = b.version;
    this.#o.log.info({ event: "agent_config_refreshed", version: b.version, from }, "agent config refreshed");
    return "installed";
  }

  async #fetch(ifVersion: string): Promise<FetchedBundle> {
    try {
      return await this.#o.source.fetch(ifVersion);
    } catch (e) {
      if (e instanceof ConfigDeliveryError) throw e;
      throw new ConfigDeliveryError("fetch-failed", `fetching agent config: ${e}`, { cause: e });
    }
  }

  async #checkAndPush(b: FetchedBundle): Promise<void> {
    if (b.tarball === null) {
      throw new ConfigDeliveryError("fetch-failed", `version ${b.version} came without its bundle`);
    }
    const cap = this.#o.maxWireBytes ?? MAX_WIRE_BYTES;
    if (b.tarball.length > cap) {
      throw new ConfigDeliveryError("bundle-unsafe", `the bundle holds ${b.tarball.length} bytes, beyond ${cap}`);
    }
    try {
      await walk(b.tarball, BUNDLE_SCHEMA);
    } catch (e) {
      if (e instanceof BundleSchemaError) throw new ConfigDeliveryError("bundle-schema", e.message, { cause: e });
      if (e instanceof UnsafeBundle) throw new ConfigDeliveryError("bundle-unsafe", e.message, { cause: e });
      throw e;
    }
    try {
      await this.#o.guest.install(b.version, b.tarball);
    } catch (e) {
      if (e instanceof GuestInstallRefused) throw guestInstallError(e.code, e.problem, e);
      throw new ConfigDeliveryError("guest-unreachable", `installing agent config: ${e}`, { cause: e });
    }
    this.#pushes++;
  }
}
