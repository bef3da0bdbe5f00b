/**
 * Why a qcow2 stream could not be converted onto a disk (`core/disks/qcow2_stream.ts`).
 *
 * @module
 */

/**
 * A refusal of the qcow2 converter: `malformed`, the header policy's own (`backing-file`, `data-file`,
 * `unknown-feature`, `encrypted`), `unsupported-feature` (extended L2, zstd), `unsupported-layout` (past the spool's or
 * the wants' bound), `too-large` (a virtual size past the disk).
 */
export class Qcow2ConvertError extends Error {
  override name = "Qcow2ConvertError";
  constructor(readonly reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}
