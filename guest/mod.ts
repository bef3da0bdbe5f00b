/**
 * The guest agent: what runs inside each VM (seed 002 §Guest agent, §"PID 1 and the worker", §"The worker's
 * executions"; seed 004 §(c)). The turn/drain protocol of seed 001 lives in `guest/turns/`.
 *
 * - {@link serve}: the agent of a VM without a layered root, on any {@link Transport} (`serve`, `init TTY`).
 * - {@link Worker}: the layered root's worker, a state machine over {@link RootOperations} ({@link FakeRoot} in
 *   tests, {@link LinuxRoot} in VMs), with the executions engine ({@link ExecEngine}: programs in process groups
 *   of their own, credit windows, generations, limits, one loop that never blocks).
 * - Probes (seed 002 §Probes): {@link PROBES} and {@link checkProbe} (the names and arguments both roots take),
 *   the layers' probes (`layer_probes.ts`), first-partition, and the mapping probes over the mapper in
 *   `guest/mapping/` (reserved sets, links refused at every component, nested creation, the root's latch).
 * - {@link ConfigInstaller}: agent config bundles installed through the safety kernel's `Tree` at
 *   `/run/bcd-guest/agent-config` (or `$BCD_GUEST_ROOT/agent-config`).
 * - The control tty: Deno cannot open devices under /dev without `--allow-all`, so the tty becomes a serving
 *   process's stdin/stdout through `sh` (`terminal.ts`).
 *
 * @module
 */
export { NO_LAYERED_ROOT, serve, type ServeOptions } from "./serve.ts";
export { GUEST_BUILD, Worker, type WorkerOptions, type WorkerPhase } from "./worker.ts";
export { MappingFailed, ProbeProblem, StageFailed } from "./root_errors.ts";
export type { RootOperations } from "./root_ops.ts";
export { checkLayout, parseLayout, type RootLayout } from "./root_layout.ts";
export { FakeRoot, type FakeRootOptions } from "./fake_root.ts";
export { checkProbe, isRelativePath, type ProbeArgument, PROBES } from "./probe_table.ts";
export { LinuxRoot, type LinuxRootOptions } from "./linux_root.ts";
export { ExecEngine, SessionError } from "./exec_engine.ts";
export * from "./exec_limits.ts";
export { agentConfigRoot, ConfigInstaller, DEFAULT_GUEST_ROOT, InstallSession } from "./config_install.ts";
export { fileTransport, RESET, type Transport } from "./transport.ts";
