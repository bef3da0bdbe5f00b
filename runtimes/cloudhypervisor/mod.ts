/**
 * The `cloud-hypervisor` instance runtime (seed 000 §The runtimes, §The cloud-hypervisor unit): one VMM per instance,
 * driven over its REST API on `instances/<id>/api.sock`.
 *
 * The parts, landed so far:
 * - `api_client.ts`: {@link ChApiClient}, the REST client over HTTP/1.1 on the unix socket (`vm.create`, `vm.boot`,
 *   `vm.pause`/`vm.resume`, `vm.shutdown`, `vm.power-button`, `vmm.shutdown`, `vm.info`, `vm.add-disk`,
 *   `vm.add-net`, `vm.remove-device`, `vm.resize`, `vm.resize-disk`, `vm.snapshot`/`vm.restore`) with typed errors
 *   ({@link ChApiError}: the VMM's status and error chain; {@link ChTransportError}: unreachable, a bad answer, a
 *   deadline).
 * - `http1.ts`: the bounded HTTP/1.1 codec, our own rather than `fetch` over a unix proxy because the NIC requests must
 *   leave as raw bytes with `SCM_RIGHTS` and a peer's head must be bounded (its doc says more).
 * - `fake_vmm.ts`: {@link FakeVmm}, a faithful fake of the VMM's API for tests (paths, JSON shapes and state machine
 *   of the published OpenAPI document and cloud-hypervisor's `vmm` crate, error chains included).
 *
 * Judgement calls, written down: one connection per request (the VMM's server keeps connections alive, but a
 * connection per call needs no pooling and a hung VMM costs one socket); a call's deadline defaults to 30 s.
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
