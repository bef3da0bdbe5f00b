/**
 * `restore_from` (000 §Instances): a new instance boots from a snapshot instead of an image. The spec's `SnapshotRef`
 * is checked first ({@link snapshotRefProblem}: https only, a lowercase SHA-256, the instance's own runtime; each
 * fails that instance), then the converger asks a {@link SnapshotFetcher} where the download stands: it runs in the
 * background, and the instance waits for it as for user data (`PROGRESSING`, "waiting for the user data or snapshot"),
 * while the pass goes on with everything else. A download that fails for the network is reported for a minute and then
 * tried again; one whose bytes do not match the digest (or that is not https after a redirect) fails the instance.
 * Every pass prunes the downloaded snapshots no desired instance restores from.
 *
 * @module
 */

/** `InstanceSpec.restore_from`, read. */
export interface SnapshotSource {
  readonly url: string;
  readonly sha256: string;
  readonly runtime: string;
  readonly includeMemory: boolean;
  readonly cpuModel: string;
  readonly sizeBytes: number;
}

/** Where a snapshot's download stands. */
export type SnapshotFetchState =
  | { readonly state: "ready" }
  | { readonly state: "downloading" }
  /** `terminal`: the instance fails; otherwise it waits and the download is tried again after a minute. */
  | { readonly state: "failed"; readonly reason: string; readonly message: string; readonly terminal: boolean };

/** The background downloads of snapshots into `data_dir/snapshots/`. */
export interface SnapshotFetcher {
  /** Where `src`'s download stands; starts it when it has not begun, or when its failure is a minute old. */
  poll(src: SnapshotSource): SnapshotFetchState;
  /** Deletes the downloaded snapshots whose digest is not in `keep` (never one still downloading). */
  prune(keep: ReadonlySet<string>): Promise<string[]>;
}

/** How long a failed download is reported before it is tried again (6827df8). */
export const SNAPSHOT_RETRY_MS = 60_000;

/** The spec's problem with a `SnapshotRef`, as `[reason, message]`, or `undefined`. */
export function snapshotRefProblem(src: SnapshotSource, runtime: string): [string, string] | undefined {
  let u: URL | undefined;
  try {
    u = new URL(src.url);
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
  }
  if (!u || u.protocol !== "https:") {
    return [
      "not-https",
      `restore_from URL ${JSON.stringify(src.url)} is not https: a snapshot may hold a tenant's memory`,
    ];
  }
  if (!/^[0-9a-f]{64}$/.test(src.sha256)) {
    return ["bad-digest", `restore_from digest ${JSON.stringify(src.sha256)} is not a lowercase SHA-256`];
  }
  if (src.runtime !== runtime) {
    return [
      "snapshot-runtime",
      `restore_from was taken by runtime ${JSON.stringify(src.runtime)}, not the instance's ${JSON.stringify(runtime)}`,
    ];
  }
  return undefined;
}
