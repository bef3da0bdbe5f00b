/**
 * The host runtime: what the command kinds need from the machine itself. The host inventory read from /proc, /sys
 * and /etc (`inventory.refresh`), the init-system rebooter (`node.reboot`), and HTTPS uploads to presigned URLs under
 * the transfer rules (`logs.collect`, later `instance.snapshot`). Each implements an interface core declares in
 * `core/commands/kind_handlers/`.
 *
 * @module
 */
export { CPU_FLAGS_OF_INTEREST, type HostInventoryRoots, SysfsHostInventory } from "./inventory.ts";
export { type CommandRunner, denoRunner, InitRebooter } from "./rebooter.ts";
// The uploader itself loads with the first upload (lazy_uploader.ts); import https_put.ts for HttpsUploader.
export type { Conn, TlsConnect, TransferLimits } from "./https_put.ts";
export { type HttpsUploaderOptions, lazyHttpsUploader } from "./lazy_uploader.ts";
export { hostKindHandlers, type HostKindOptions } from "./kind_handlers.ts";
