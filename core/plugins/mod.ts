/**
 * Driver plugins (`README.md` here is the contract): the manifest and frames, the host that runs plugin processes,
 * and the `driver.invoke` kind over it.
 *
 * @module
 */
export { type DriverInvoke, driverInvokeHandler, driverInvokePayload } from "./driver_invoke.ts";
export { PluginHost, type PluginHostOptions } from "./host.ts";
export { PluginRuntime, TAPS_MISSING } from "./plugin_runtime.ts";
export {
  DirPluginSource,
  type DirPluginSourceOptions,
  dropArgv,
  type PluginChannel,
  type PluginIdentity,
  type PluginSource,
} from "./source.ts";
export {
  decodeExit,
  decodeHostFrame,
  decodePluginFrame,
  DEFAULT_TIMEOUTS,
  encodeExit,
  encodeFrame,
  type HostFrame,
  isOperationName,
  isPluginName,
  MAX_FRAME,
  MAX_INPUT,
  MAX_OUTPUT,
  parseManifest,
  PLUGIN_PROTOCOLS,
  PluginError,
  type PluginExit,
  type PluginFailure,
  type PluginFrame,
  type PluginManifest,
  type PluginTimeouts,
  RUNTIME_OPERATION,
} from "./protocol.ts";
