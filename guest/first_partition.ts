/**
 * The first partition of a GPT disk (seed 002 §Probes, first-partition): the assembly reads its bytes, which the
 * configuration's bound (root::DEFAULT_FIRST_PARTITION_BOUND, 64 KiB, unless it names another) limits, and the
 * probe reports them without their trailing padding (the zero bytes after the last other byte), in hexadecimal.
 *
 * @module
 */
import type { Facts } from "../core/framing/mod.ts";

/** `root::DEFAULT_FIRST_PARTITION_BOUND`. */
export const DEFAULT_FIRST_PARTITION_BOUND = 65536n;

/** The bytes without their trailing zero padding (a view, not a copy). */
export function withoutPadding(bytes: Uint8Array): Uint8Array {
  let end = bytes.length;
  while (end > 0 && bytes[end - 1] === 0) end--;
  return bytes.subarray(0, end);
}

/** The probe's facts: `length` and `bytes` in lowercase hexadecimal, or `none` for both (an EROFS image). */
export function firstPartitionFacts(bytes: Uint8Array | null): Facts {
  if (bytes === null) return [["length", "none"], ["bytes", "none"]];
  const data = withoutPadding(bytes);
  let hex = "";
  for (const b of data) hex += b.toString(16).padStart(2, "0");
  return [["length", String(data.length)], ["bytes", hex]];
}
