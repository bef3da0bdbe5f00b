/**
 * Privilege separation's two halves over `core/helper`'s protocol: the root helper's server
 * ({@link HelperServer}, over {@link HelperBackends}: the real runtimes from {@link hostBackends}, or temp roots in
 * tests), and the agents' {@link HelperClient} with the host ports built on it (hold store, slices, host memory, host
 * inventory, rebooter, GPU tool, boot id, nftables).
 *
 * @module
 */
export type { HelperBackends, HoldFiles } from "./backends.ts";
export { DEFAULT_OP_TIMEOUT_MS, HelperClient, type HelperClientOptions, OP_TIMEOUTS_MS } from "./client.ts";
export { runOp } from "./dispatch.ts";
export { Mutex } from "./mutex.ts";
export { HelperNft } from "./nft_port.ts";
export { groupId, type HostBackendOptions, hostBackends, systemdRuns } from "./host_backends.ts";
export {
  helperBootId,
  HelperGpuTool,
  HelperHoldStore,
  HelperHostInventory,
  HelperHostMemory,
  HelperRebooter,
  HelperSliceManager,
} from "./ports.ts";
export {
  HelperHugepages,
  HelperKernelModules,
  HelperMig,
  HelperPackages,
  HelperSharing,
  HelperSysctl,
} from "./ports_host.ts";
export {
  type HelperListener,
  HelperServer,
  type HelperServerOptions,
  IDLE_TIMEOUT_MS,
  type ListenOptions,
  MAX_CONNECTIONS,
  MAX_IN_FLIGHT,
  PARTIAL_LINE_DEADLINE_MS,
  REFUSAL_LOG_BURST,
  WRITE_STALL_MS,
} from "./server.ts";
export { MAX_UNSENT_ANSWER_BYTES } from "./peer.ts";
export { prepareSocketDir, SocketDirRefused } from "./socket_dir.ts";
