/**
 * Fleet config delivery, host side (seed 004): the bundle schema checked on the host before every push, the Runner
 * that provisions a guest and refreshes it on a ConfigVersion publish, and the named failures, `unimplemented` read
 * as "guest image too old". The guest's half (the safety kernel and the versioned tree) is `guest/config_install.ts`
 * over `core/images/`; the transports are in `runtimes/agent_config/`.
 *
 * @module
 */
export { type ConfigDeliveryCode, ConfigDeliveryError, GUEST_CODE_MAP, guestInstallError } from "./errors.ts";
export {
  ConfigRunner,
  type ConfigRunnerOptions,
  type ConfigSource,
  type FetchedBundle,
  type GuestConfigPort,
  GuestInstallRefused,
  type RefreshResult,
} from "./runner.ts";
export { BUNDLE_SCHEMA, BundleSchemaError, TOP_DIRS, TOP_FILES } from "./schema.ts";
