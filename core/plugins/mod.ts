/**
 * Driver plugins (`README.md` here is the contract): the manifest and frames, the host that runs plugin processes,
 * and the `driver.invoke` kind over it.
 *
 * @module
 */
export { type DriverInvoke, driverInvokeHandler, driverInvokePayload } from "./driver_invoke.ts";
export { PluginHost, type PluginHostOptions } from "./host.ts";
export {
  decodePluginFrame,
  DEFAULT_TIMEOUTS,
  encodeFrame,
  type HostFrame,
  MAX_FRAME,
  MAX_INPUT,
  MAX_OUTPUT,
  parseManifest,
  PLUGIN_PROTOCOLS,
  PluginError,
  type PluginFailure,
  type PluginFrame,
  type PluginManifest,
  type PluginTimeouts,
  RUNTIME_OPERATION,
} from "./protocol.ts";
