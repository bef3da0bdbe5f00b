/**
 * The `cloud-hypervisor` instance runtime (seed 000 §The runtimes, §The cloud-hypervisor unit): one VMM per instance,
 * driven over its REST API on `instances/<id>/api.sock`.
 *
 * The parts:
 * - `ch_runtime.ts`: {@link ChRuntime}, the node's `InstanceRuntime` (list from `vm.json` records only, define over the
 *   shared image code, start, the stop ladder, delete, grow, restores) and `api(id)` for the volume, balloon and
 *   rebind code.
 * - `api_client.ts`: {@link ChApiClient}, the REST client over HTTP/1.1 on the unix socket with typed errors
 *   ({@link ChApiError}: the VMM's status and error chain; {@link ChTransportError}: unreachable, a bad answer, a
 *   deadline); `http1.ts`, the bounded codec (ours rather than `fetch` over a unix proxy: the NIC requests leave as raw
 *   bytes with `SCM_RIGHTS`, and a peer's head must be bounded).
 * - `unit.ts`: the VMM's transient unit, the seed's property table as a pure function; `units.ts`: systemd.
 * - `ch_balloon.ts`: the balloon verbs over `vm.info`/`vm.resize` (sizes in what the guest is left, as on
 *   `libvirt-kvm`); `vmm_memory.ts`: the guest's use, read from the VMM unit's cgroup `memory.stat`.
 * - `ch_rebind.ts`: one identity rebind try (the disk `vdz`, serial `bc-rebind`, on `core/rebind`'s shared file and
 *   wait); `ch_unplug.ts`: hot-unplug as the VMM does it (`vm.remove-device`, then the guest's eject: `detach-pending`
 *   while `vm.info`'s `device_tree` still has the device).
 * - `vm_record.ts`: `vm.json`, read strictly; `config_keys.ts`, `restore_config.ts`: the allowlists and the rebuilt
 *   configuration of a memory restore.
 * - `ch_host.ts`: {@link ChHost}, root's half (`ChHostPort`, served by the helper's `ch.*` ops; `helper_port.ts` is the
 *   node's client of them), with `ip_taps.ts` (taps), `fd_sender.ts` + `libc.ts` (`SCM_RIGHTS` through FFI, root only)
 *   and `vfio.ts` (IOMMU groups to `vfio-pci`); `host_setup.ts` turns it on when the binary is on root's `PATH`.
 * - Fakes for tests: `fake_vmm.ts` (+ `fake_vmm_fds.ts`), `fake_systemd.ts`, `fake_taps.ts`, `fake_sysfs_vfio.ts`,
 *   wired by `ch_testing.ts`.
 *
 * Judgement calls, written down: one connection per API request (the VMM's server keeps connections alive, but a
 * connection per call needs no pooling and a hung VMM costs one socket); a call's deadline defaults to 30 s; a unit
 * that runs with no booted VM in it is listed `running` (so it is stopped again, never forgotten); the VMM uids are
 * `0x7FFD0000` to `0x7FFDFFFF`; a volume's disk has the VMM id `vol-<volume id>` (so a removal the guest has not
 * finished is still found in the device tree); root hands each tap to the VMM in the same `sendmsg` as the API request (the node holds
 * no tap fd: see `libc.ts` for why).
 *
 * @module
 */
export {
  ChApiClient,
  type ChApiClientOptions,
  ChApiError,
  type ChTransport,
  ChTransportError,
  fileUrl,
} from "./api_client.ts";
export type * from "./api_types.ts";
export { SNAPSHOT_FILES, VM_STATES } from "./api_types.ts";
export { type FakeGuest, type FakeRequest, type FakeResponse, FakeVmm } from "./fake_vmm.ts";
