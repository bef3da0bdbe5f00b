/**
 * Safety kernels for untrusted input (seed 000 §Tenant images, seed 004 T1, seed 002 §"The guest agent in place of
 * NVX's agents"):
 *
 * - the config-bundle safety kernel: {@link walk} and {@link unpack} of a gzip-compressed tar under the caps
 *   {@link MAX_FILES}, {@link MAX_BYTES}, {@link MAX_WIRE_BYTES}, refusing with {@link UnsafeBundle};
 * - the versioned config {@link Tree} with its atomic `current` flip (its flip link is made by `Deno.symlink`,
 *   which Deno allows only under an unscoped `--allow-write`; a role whose writes are path-scoped passes
 *   `TreeOptions.symlink`, e.g. one that runs `ln -s`);
 * - the qcow2 header check {@link checkImage} and the instance-disk check {@link checkOverlay}, refusing with
 *   {@link ImageRefused} (`malformed`, `backing-file`, `data-file`, `unknown-feature`, `encrypted`,
 *   `backing-mismatch`);
 * - the newc writer for initramfs overlays: {@link newcArchive}, {@link appendArchive}, {@link writeInitramfs}.
 *
 * Export names here are stable; other modules import from this file only.
 *
 * @module
 */
export {
  type BundleSummary,
  type Check,
  DIR_MODE,
  FILE_MODE,
  MAX_BYTES,
  MAX_EXTENSION_BYTES,
  MAX_FILES,
  MAX_TAR_BYTES,
  MAX_WIRE_BYTES,
  type MemberType,
  unpack,
  walk,
} from "./bundle_walk.ts";
export { cleanName, MAX_COMPONENT_BYTES, MAX_NAME_BYTES } from "./bundle_name.ts";
export { type ImageReason, ImageRefused, UnsafeBundle, type UnsafeReason } from "./errors.ts";
export { CURRENT, INSTALL_STEPS, type InstallStep, Tree, type TreeOptions } from "./tree.ts";
export { alignmentPadding, appendArchive, newcArchive, type NewcEntry, writeInitramfs } from "./newc.ts";
export {
  checkImage,
  checkQcow2Features,
  checkQcow2Header,
  EXT_BACKING_FORMAT,
  EXT_BITMAPS,
  EXT_CRYPTO,
  EXT_DATA_FILE,
  EXT_END,
  EXT_FEATURE_TABLE,
  type ImageCheck,
  type ImageFormat,
  INCOMPAT_COMPRESSION,
  INCOMPAT_CORRUPT,
  INCOMPAT_DATA_FILE,
  INCOMPAT_DIRTY,
  INCOMPAT_EXTL2,
  INCOMPAT_KNOWN,
  MAX_CLUSTER_BITS,
  MIN_CLUSTER_BITS,
  parseQcow2Header,
  QCOW2_MAGIC,
  QCOW2_MAX_PREFIX,
  type Qcow2Header,
  readQcow2Prefix,
} from "./qcow2_header.ts";
export { checkOverlay, checkOverlayHeader, type ExpectedBacking } from "./overlay.ts";
