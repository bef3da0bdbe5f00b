/**
 * The name rules of the bundle safety kernel (seed 004 T1 "traversal and containment"): a member name, after any
 * PAX `path` or GNU long name replaced it, is cleaned to a relative slash-separated path below the destination, or
 * refused with a named reason.
 *
 * @module
 */
import { UnsafeBundle } from "./errors.ts";

/** Longest accepted clean name in UTF-8 bytes (Linux PATH_MAX). */
export const MAX_NAME_BYTES = 4096;
/** Longest accepted name component in UTF-8 bytes (Linux NAME_MAX). */
export const MAX_COMPONENT_BYTES = 255;

const _enc = new TextEncoder();

/**
 * Cleans a member name: drops `.` and empty components (so `./a//b/` is `a/b`), and refuses an empty name, a NUL,
 * a backslash anywhere, an absolute or drive-relative name and any `..` component. The archive root itself
 * (`./`) cleans to `"."`.
 *
 * @example cleanName("./etc/app.toml") // "etc/app.toml"
 */
export function cleanName(raw: string): string {
  if (raw.length === 0) throw new UnsafeBundle("bad-name", "empty member name");
  if (raw.includes("\0")) throw new UnsafeBundle("bad-name", `member name ${JSON.stringify(raw)} contains a NUL`);
  if (raw.includes("\\")) {
    throw new UnsafeBundle("backslash", `member name ${JSON.stringify(raw)} contains a backslash`);
  }
  if (raw.startsWith("/")) throw new UnsafeBundle("absolute", `member name ${JSON.stringify(raw)} is absolute`);
  if (/^[A-Za-z]:/.test(raw)) {
    throw new UnsafeBundle("drive", `member name ${JSON.stringify(raw)} is drive-relative`);
  }
  const parts: string[] = [];
  for (const c of raw.split("/")) {
    if (c === "" || c === ".") continue;
    if (c === "..") throw new UnsafeBundle("traversal", `member name ${JSON.stringify(raw)} climbs out with ".."`);
    if (_enc.encode(c).length > MAX_COMPONENT_BYTES) {
      throw new UnsafeBundle("bad-name", `a component of ${JSON.stringify(raw.slice(0, 64))}… is too long`);
    }
    parts.push(c);
  }
  const clean = parts.length === 0 ? "." : parts.join("/");
  if (_enc.encode(clean).length > MAX_NAME_BYTES) {
    throw new UnsafeBundle("bad-name", `member name ${JSON.stringify(raw.slice(0, 64))}… is too long`);
  }
  return clean;
}
