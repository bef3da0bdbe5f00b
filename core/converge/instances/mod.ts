/**
 * The `instances` section: desired VMs converged on the host's runtimes behind the {@link InstanceRuntime} port.
 *
 * @module
 */
export {
  type InstanceAction,
  type InstanceListing,
  type InstanceReport,
  InstancesConverger,
  type ObservedDomain,
  RuntimeListingFailed,
} from "./converger.ts";
export { type InstanceNetwork, NETWORK_POLICY_REASON, type NetworkVerdict } from "./network.ts";
export { IFNAME_MAX, MAX_NICS, TAP_PREFIX, tapName } from "./tap_name.ts";
export { type Domain, type DomainRecord, type DomainState, type InstanceRuntime, RuntimeRefused } from "./runtime.ts";
