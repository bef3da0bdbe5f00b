/**
 * The helper's argument checks for the kexec ops (issue 19, `boot.kexec` on the ramdisk, self-terminating). The
 * ramdisk's init must ship kexec-tools (`/usr/sbin/kexec`), `mount`/`umount`, `blkid` and a kernel with
 * `CONFIG_KEXEC`; the e2e boots into the deployed kernel through exactly these two ops:
 *
 * | op            | fields | rule |
 * | ------------- | ------ | ---- |
 * | `kexec.load`  | `source: "disk"`, `diskId`, `kernel`, `initrd?`, `cmdline`, `kernelSha256?`, `initrdSha256?` | a by-id name of the deployed disk; absolute paths on its filesystem (at most 1024 characters, no `..`, no control characters); a kernel command line of printable ASCII, at most 2047 characters; digests 64 lowercase hex digits |
 * | `kexec.load`  | `source: "url"`, `kernel`, `kernelSha256`, `initrd?`, `initrdSha256?`, `cmdline` | `https://` URLs (at most 4096 characters), each with its digest (required) |
 * | `kexec.exec`  | none | — |
 *
 * `kexec.load`: root finds the file on the disk itself (the partition the command line's `root=UUID=`/`PARTUUID=`/
 * `LABEL=`/`PARTLABEL=` names first, then each partition in order; mounted read-only, `nosuid,nodev,noexec`, in a
 * private directory, symlinks resolved inside that filesystem), or downloads it; checks the digests; runs
 * `kexec -l`. `kexec.exec`: answers once a loaded kernel is confirmed (`/sys/kernel/kexec_loaded`), then runs
 * `kexec -e`, which does not return: the agent had journaled `running` before it asked.
 *
 * @module
 */
import { isDiskId } from "../disks/disk_id.ts";
import { argObject as _object, refuseArg as _refuse } from "./arg_fields.ts";
import type { HelperArgs } from "./protocol.ts";

/** The longest kernel command line (x86's COMMAND_LINE_SIZE less its NUL). */
export const MAX_CMDLINE = 2047;

function _path(op: string, field: string, v: unknown): string {
  if (
    typeof v !== "string" || !v.startsWith("/") || v.length > 1024 || v.split("/").includes("..") ||
    // deno-lint-ignore no-control-regex
    /[\u0000-\u001f\u007f]/.test(v)
  ) {
    _refuse(op, field, v, "is not an absolute path of at most 1024 characters without .. or control characters");
  }
  return v;
}

function _url(op: string, field: string, v: unknown): string {
  // deno-lint-ignore no-control-regex
  if (typeof v !== "string" || !v.startsWith("https://") || v.length > 4096 || /[\s\u0000-\u001f\u007f]/.test(v)) {
    _refuse(op, field, v, "is not an https URL of at most 4096 characters");
  }
  return v;
}

function _sha(op: string, field: string, v: unknown): string {
  if (typeof v !== "string" || !/^[0-9a-f]{64}$/.test(v)) _refuse(op, field, v, "is not a SHA-256 in lowercase hex");
  return v;
}

/** The checkers of the kexec ops, joined into the helper's argument table. */
export const KEXEC_ARG_CHECKS: {
  readonly "kexec.load": (raw: unknown) => HelperArgs["kexec.load"];
  readonly "kexec.exec": (raw: unknown) => HelperArgs["kexec.exec"];
} = {
  "kexec.load": (raw) => {
    const op = "kexec.load";
    const fields = ["source", "diskId", "kernel", "initrd", "cmdline", "kernelSha256", "initrdSha256"];
    const a = _object(op, "args", raw, fields, ["source", "kernel", "cmdline"]);
    if (typeof a.cmdline !== "string" || a.cmdline.length > MAX_CMDLINE || !/^[\x20-\x7e]*$/.test(a.cmdline)) {
      _refuse(op, "cmdline", a.cmdline, `is not printable ASCII of at most ${MAX_CMDLINE} characters`);
    }
    const cmdline = a.cmdline;
    const initrdSha = a.initrdSha256 !== undefined ? { initrdSha256: _sha(op, "initrdSha256", a.initrdSha256) } : {};
    if (a.source === "disk") {
      if (!isDiskId(a.diskId)) _refuse(op, "diskId", a.diskId, "is not a /dev/disk/by-id name");
      return {
        source: "disk",
        diskId: a.diskId,
        kernel: _path(op, "kernel", a.kernel),
        ...(a.initrd !== undefined ? { initrd: _path(op, "initrd", a.initrd) } : {}),
        cmdline,
        ...(a.kernelSha256 !== undefined ? { kernelSha256: _sha(op, "kernelSha256", a.kernelSha256) } : {}),
        ...initrdSha,
      };
    }
    if (a.source !== "url") _refuse(op, "source", a.source, "is not disk or url");
    if (a.diskId !== undefined) _refuse(op, "diskId", a.diskId, "is not taken with source url");
    if (a.initrd !== undefined && a.initrdSha256 === undefined) {
      _refuse(op, "initrdSha256", a.initrdSha256, "is required with an initrd URL");
    }
    return {
      source: "url",
      kernel: _url(op, "kernel", a.kernel),
      kernelSha256: _sha(op, "kernelSha256", a.kernelSha256),
      ...(a.initrd !== undefined ? { initrd: _url(op, "initrd", a.initrd) } : {}),
      cmdline,
      ...initrdSha,
    };
  },
  "kexec.exec": (raw) => {
    _object("kexec.exec", "args", raw, []);
    return {};
  },
};
