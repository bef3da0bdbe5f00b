/**
 * What the host units reach the host through: narrow ports the node implements over the root helper
 * (`runtimes/helper/ports_host.ts`) and tests implement over temp roots or fakes. No port takes a path.
 *
 * @module
 */
import type { HugepageObserved, HugepageSize, HugepageStep } from "./hugepages.ts";
import type { SysctlObserved, SysctlStep } from "./sysctl.ts";

/** The sysctl file and live values. */
export interface SysctlPort {
  /** The live values of `keys` and of every key bcd manages, and the managed keys with their originals. */
  read(keys: readonly string[]): Promise<SysctlObserved>;
  /** Carries out the steps (file first for a set, live first for a restore); the live values read back. */
  apply(steps: readonly SysctlStep[]): Promise<Readonly<Record<string, string | null>>>;
}

/** What a pool came to after a set. */
export interface PoolResult {
  readonly size: HugepageSize;
  readonly node?: number;
  readonly wanted: number;
  /** The pool's count read back. */
  readonly total: number;
}

/** The huge page pools. */
export interface HugepagePort {
  read(): Promise<HugepageObserved>;
  /** Carries out the steps; the set pools read back. */
  apply(steps: readonly HugepageStep[]): Promise<readonly PoolResult[]>;
}
