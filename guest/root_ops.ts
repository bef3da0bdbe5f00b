/**
 * `worker::RootOperations`: what the worker does to a layered root, behind an interface so that tests run the
 * worker against a fake root ({@link FakeRoot}) and a VM against the Linux one (`linux_root.ts`).
 *
 * @module
 */
import type { Facts, Mapping, Probe, RootConfig } from "../core/framing/mod.ts";
import type { RootLayout } from "./root_layout.ts";

/** The operations of a layered root, in the order the worker runs them. */
export interface RootOperations {
  /** The layout stage: the boot layout of the root from the kernel command line (throws StageFailed "layout"). */
  readLayout(): Promise<RootLayout>;
  /** The bootstrap stage: the cgroups and their resource values (throws StageFailed "bootstrap"). */
  bootstrap(config: RootConfig): Promise<void>;
  /** The assembly stage (throws StageFailed "assembly"). */
  assemble(config: RootConfig, layout: RootLayout): Promise<void>;
  /** Runs a probe on the root (throws ProbeProblem). */
  probe(probe: Probe): Promise<Facts>;
  /** Applies one mapping beneath the root (throws MappingFailed). */
  applyMapping(mapping: Mapping): Promise<void>;
  /** Starts the sandbox's workloads. */
  startWorkloads(): Promise<void>;
  /** The teardown stage (throws StageFailed "teardown"). */
  teardown(): Promise<void>;
  /** Before the worker exits: closes what probes hold, unmounts a root it still holds, ignoring failures. */
  release(): Promise<void>;
}
