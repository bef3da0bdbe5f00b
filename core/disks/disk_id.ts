/**
 * A disk's stable id as bcd names it on the wire: a `/dev/disk/by-id` name from the inventory (`nvme-…`, `wwn-…`,
 * `ata-…`), never a kernel name or a path. Root resolves it (`runtimes/disks/disk_guard.ts`).
 *
 * @module
 */

/** A by-id name: 1–255 of `[A-Za-z0-9._:+@-]`, starting alphanumeric (no `/`, no `..` at the start, no dot file). */
export const DISK_ID = /^[A-Za-z0-9][A-Za-z0-9._:+@-]{0,254}$/;

/** Whether `s` is a by-id name. */
export function isDiskId(s: unknown): s is string {
  return typeof s === "string" && DISK_ID.test(s);
}
