/**
 * CDI holds on disk: the hold store ({@link CdiHoldStore}: `/etc/cdi/bcd-<allocation id>.json` specs, CDI 0.6, and
 * `/run/bcd/allocations/<allocation id>.env` env files, each written atomically and read back every pass), the spec
 * renderer and reader, the CDI name grammar, and the atomic write.
 *
 * @module
 */
export { atomicWrite, removeDurably, syncDir } from "./atomic_write.ts";
export { isValidCdiDeviceName, isValidCdiKind, isValidQualifiedCdiName } from "./cdi_name.ts";
export { CdiHoldStore, type CdiHoldStoreOptions, STALE_TEMP_MS } from "./hold_store.ts";
export {
  CDI_VERSION,
  type CdiSpec,
  CdiSpecError,
  cdiSpecText,
  envFileText,
  MAX_SPEC_BYTES,
  parseCdiSpec,
  renderCdiSpec,
} from "./spec.ts";
