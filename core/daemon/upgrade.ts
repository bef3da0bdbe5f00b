/**
 * One self-update step, shared by the `daemon` section's converger and `daemon.upgrade`: nothing to do when this
 * process already runs the target version; a refusal when the helper rolled that version back (a version that never
 * reached `Welcome` is not tried again until another version is asked for); a wait while a swap to it awaits its
 * confirm; otherwise the signature check against the trust bundle's release keys, the download (SHA-256 while it
 * streams) and the helper's install, after which the helper restarts this process.
 *
 * @module
 */
import type { DaemonHost, ReleaseFetcher } from "./ports.ts";
import { checkTarget, ReleaseRefused, type ReleaseTarget, verifyReleaseSignature } from "./release.ts";

/** What {@link upgradeStep} did. */
export type UpgradeStep =
  /** This process runs the version. */
  | { readonly kind: "current"; readonly previous: string | null }
  /** A swap to it awaits its new process's confirm. */
  | { readonly kind: "pending" }
  /** The helper swapped it in and restarts the agent now. */
  | { readonly kind: "installed" };

/** What the step needs. */
export interface UpgradeDeps {
  /** The version this process runs (`AGENT_VERSION`). */
  readonly running: string;
  readonly host: DaemonHost;
  readonly fetcher: ReleaseFetcher;
  /** The trust bundle's release keys, read when the step runs. */
  readonly releaseKeys: () => Promise<readonly Uint8Array[]>;
}

/** Moves toward `target`; throws {@link ReleaseRefused} for what must not be retried. */
export async function upgradeStep(target: ReleaseTarget, d: UpgradeDeps): Promise<UpgradeStep> {
  checkTarget(target);
  const state = await d.host.status();
  if (target.version === d.running) return { kind: "current", previous: state.previous };
  if (state.failed?.version === target.version) {
    throw new ReleaseRefused("rolled-back", `release ${target.version} was rolled back: ${state.failed.message}`);
  }
  if (state.pending?.version === target.version) return { kind: "pending" };
  await verifyReleaseSignature(target.sha256, target.signature, await d.releaseKeys());
  await d.fetcher.fetch(target);
  await d.host.install({ version: target.version, sha256: target.sha256, signature: target.signature });
  return { kind: "installed" };
}
