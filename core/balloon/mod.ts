/**
 * Memory ballooning (000 §Memory ballooning): a guest whose `InstanceSpec.placement` asks for a balloon lends the
 * host the memory it does not use.
 *
 * - `policy.ts`: the seed's table as a pure function ({@link balloonSteps}) of the host's `MemTotal`, `MemAvailable`
 *   and PSI `some avg10` and the guests' memory, balloon size and use, with each guest's floor
 *   ({@link balloonFloorBytes}); table-tested one row per seed row.
 * - `pressure.ts`: the host readings ({@link MemoryPressureSource}, {@link parseMemoryPressure}); the node reads them
 *   through the root helper's `host.memory_pressure` (`runtimes/cgroup/memory_pressure.ts` as root).
 * - `port.ts`: what a runtime answers ({@link BalloonPort}, {@link NoBalloon} for the seed's `ErrNoBalloon`).
 * - `loop.ts`: every 30 s, decide and resize ({@link BalloonLoop}); what each guest lends is
 *   `bcd.instance.memory.balloon.reclaimed`.
 *
 * Never with huge pages: such a guest is no candidate, and the libvirt host refuses a plan asking for both. Admission
 * charges full memory: nothing here changes what `core/converge/instances/admission.ts` counts.
 *
 * Judgement calls: see `policy.ts` (whole KiB, deflation order, partial last step, no PSI = never stalled) and
 * `loop.ts` (a failed reading skips the pass; a `NoBalloon` guest is left alone while it stays a candidate). Runtimes:
 * `libvirt-kvm` answers through `libvirt.domstats`/`libvirt.setmem` (the guest's use from the balloon driver's
 * statistics, reported every 10 s); `cloud-hypervisor` through `vm.info` and `vm.resize`'s `desired_balloon`
 * (`runtimes/cloudhypervisor/ch_balloon.ts`; the guest's use is its VMM's anonymous memory, since that balloon has no
 * statistics). Both runtimes' verbs keep one contract (`runtimes/instance_runtime_contract_testing.ts`).
 *
 * @example
 * ```ts
 * const loop = new BalloonLoop({ pressure, candidates: () => conv.balloonCandidates(), port: () => runtime,
 *   floorPercent: 50, clock: realClock, log });
 * loop.start();
 * ```
 *
 * @module
 */
export {
  type BalloonDecision,
  balloonFloorBytes,
  type BalloonGuest,
  type BalloonStep,
  balloonSteps,
  type HostPressure,
  type HostState,
  hostState,
} from "./policy.ts";
export { MAX_MEMINFO_CHARS, MAX_PSI_CHARS, type MemoryPressureSource, parseMemoryPressure } from "./pressure.ts";
export { type BalloonCandidate, type BalloonPort, type BalloonReading, NoBalloon } from "./port.ts";
export { BALLOON_INTERVAL_MS, BalloonLoop, type BalloonLoopOptions, type BalloonReclaim } from "./loop.ts";
