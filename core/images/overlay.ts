/**
 * `checkOverlay` (seed 000 §Tenant images): an instance's own `disk.qcow2` must name exactly the recorded base
 * image path and format as its backing file, or none for a restored snapshot or an iso install; anything else is
 * `backing-mismatch`. Its own header must pass every other check of the base-image policy first, so an overlay with
 * a data file, encryption or an unknown incompatible bit is refused with that reason.
 *
 * @module
 */
import { ImageRefused } from "./errors.ts";
import { checkQcow2Features, parseQcow2Header, type Qcow2Header, readQcow2Prefix } from "./qcow2_header.ts";

/** The backing file an overlay must name: the recorded base image's path and format. */
export interface ExpectedBacking {
  path: string;
  format: "qcow2" | "raw";
}

/** The overlay policy over a parsed header: `expected` is the recorded base, or `null` for none. */
export function checkOverlayHeader(h: Qcow2Header, expected: ExpectedBacking | null): void {
  checkQcow2Features(h);
  if (expected === null) {
    if (h.backingFieldsSet) {
      throw new ImageRefused(
        "backing-mismatch",
        `the disk names backing file ${JSON.stringify(h.backingFile ?? "")}; this instance's disk may name none`,
      );
    }
    return;
  }
  if (h.backingFile !== expected.path || h.backingFormat !== expected.format) {
    throw new ImageRefused(
      "backing-mismatch",
      `the disk names backing file ${JSON.stringify(h.backingFile)} (format ${JSON.stringify(h.backingFormat)}); ` +
        `only the recorded base ${JSON.stringify(expected.path)} (format ${expected.format}) is allowed`,
    );
  }
}

/** Checks the overlay at `path` against `expected` (throws {@link ImageRefused}); returns its header. */
export async function checkOverlay(path: string, expected: ExpectedBacking | null): Promise<Qcow2Header> {
  const h = parseQcow2Header(await readQcow2Prefix(path));
  checkOverlayHeader(h, expected);
  return h;
}
