/**
 * The self-update's wiring for an agent beside its helper (node, site): the `daemon` section's converger, the
 * `daemon.upgrade` handler and the confirm sent after each `Welcome`, over the helper's `daemon.*` ops, the https
 * fetcher into the data dir's staging directory, and the trust bundle's release keys as `identity.json` holds them now.
 *
 * @module
 */
import { DaemonConverger } from "../core/daemon/converger.ts";
import { daemonUpgradeHandler } from "../core/daemon/upgrade_handler.ts";
import type { UpgradeDeps } from "../core/daemon/upgrade.ts";
import type { KindHandler } from "../core/commands/handlers.ts";
import { readIdentity } from "../core/journal/mod.ts";
import { releaseKeysFromWire } from "../core/session/identity.ts";
import { AGENT_VERSION } from "../core/version.ts";
import { HelperDaemonHost } from "../runtimes/helper/ports_daemon.ts";
import { helperOf, type WiringContext } from "./_agent_cli.ts";

function _deps(ctx: WiringContext): UpgradeDeps {
  return {
    running: AGENT_VERSION,
    host: new HelperDaemonHost(helperOf(ctx)),
    // The https fetcher's code (with the download and the helper upgrader's staging name) loads with a release.
    fetcher: {
      fetch: async (target) =>
        new (await import("../runtimes/daemon/release_fetcher.ts")).HttpsReleaseFetcher(ctx.dataDir).fetch(target),
    },
    releaseKeys: async () => {
      const tb = (await readIdentity(ctx.dataDir))?.trust_bundle;
      return typeof tb === "string" ? releaseKeysFromWire(Uint8Array.from(atob(tb), (c) => c.charCodeAt(0))) : [];
    },
  };
}

/** The `daemon` section's converger. */
export function daemonConverger(ctx: WiringContext): DaemonConverger {
  return new DaemonConverger(_deps(ctx));
}

/** The `daemon.upgrade` handler. */
export function daemonUpgrade(ctx: WiringContext): KindHandler {
  return daemonUpgradeHandler(_deps(ctx));
}

/** Tells the helper this version's process reached `Welcome` (it confirms a pending swap to it, if any). */
export function confirmRelease(ctx: WiringContext): () => Promise<void> {
  return () => new HelperDaemonHost(helperOf(ctx)).confirm(AGENT_VERSION);
}
