/**
 * The `map` probe's facts for the standard host table, as both roots must report them (the fake root's model and the
 * Linux root on real mounts are checked against this one table, so they cannot drift apart).
 *
 * @module
 */

/** The host table's mounts, in order. */
export const MAP_MOUNTS = "/srv/maps/dir /srv/maps/dir/inner /srv/maps/file.txt /srv/maps/out";

/** `map` facts, in the order the probe reports them. */
export const EXPECTED_MAP_FACTS: readonly (readonly [string, string])[] = [
  ["zero", "applied"],
  ["zero.mounts", "none"],
  ["table", "applied"],
  ["mounts", MAP_MOUNTS],
  ["dir.options", "ro,nosuid,nodev,relatime"],
  ["dir.write", "refused EROFS"],
  ["dir.read", "inner marker"],
  ["inner.options", "rw,nosuid,nodev,relatime"],
  ["inner.write", "allowed"],
  ["inner.source", "reached"],
  ["file.options", "ro,nosuid,nodev,relatime"],
  ["file.write", "refused EROFS"],
  ["file.read", "runtime-adapter-file"],
  ["out.options", "rw,nosuid,nodev,relatime"],
  ["out.write", "allowed"],
  ["out.source", "reached"],
  ["upper.directory", "true"],
  ["upper.file", "true"],
  ["latched", "false"],
];
