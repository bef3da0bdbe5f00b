/**
 * The guest agent in place of the base initramfs's agents (seed 002 §"The guest agent in place of NVX's agents"): a
 * second newc archive, appended to a copy of the base initramfs at a 4-byte boundary, which Linux unpacks over the
 * first. The base's `/init` hands a VM with `nvx_sandbox=1` to `/sbin/bcd-init-agent` (no arguments) and any other
 * to `/sbin/bcd-managed-agent PORT` (the control port, `/dev/virtio-ports/org.bcd.control`, see `vmm.ts`); the
 * archive replaces both with links to its own launchers:
 *
 * - `/opt/bcd/guest.js` (the bundled guest agent) and `/sbin/bcd-guest`, which runs it with the base's Deno under
 *   the flags the launch names — `--allow-all`: PID 1 of a layered root mounts it and writes cgroupfs and
 *   `/proc/sysrq-trigger`, which Deno grants only to `--allow-all` — and `BCD_GUEST_ALLOW_ALL=1`, so that the
 *   worker and idle child it starts run with the same;
 * - `/sbin/bcd-guest-init`: `bcd-guest init "$1"` (the control port, the first argument `/init` passes);
 * - `/sbin/bcd-guest-layered`: `bcd-guest init PORT layered` (it names the port itself: `/init` passes none);
 * - the links `/sbin/bcd-managed-agent` → `bcd-guest-init` and `/sbin/bcd-init-agent` → `bcd-guest-layered`;
 * - `/etc/bcd/channel-key` (mode 0400), the launch's capability, which is also the VM's channel key: the guest
 *   requires each attach to prove it (`core/framing/attach.ts`), when the launch names one.
 *
 * Linux removes a file whose type an archive changes before creating the new one, so each link replaces the base's
 * agent without writing to its file. The base stays as it is.
 *
 * @module
 */
import { formatChannelKey } from "../../core/turns/auth.ts";
import { type NewcEntry, writeInitramfs } from "../../core/images/newc.ts";
import { CONTROL_PORT_PATH } from "./vmm.ts";

/** The entries of the appended archive for a bundled guest agent. */
export function guestAgentEntries(
  agentJs: Uint8Array,
  guestFlags: readonly string[],
  capability?: Uint8Array,
): NewcEntry[] {
  const sh = (body: string) => new TextEncoder().encode(`#!/bin/sh\n${body}\n`);
  const cap: NewcEntry[] = capability === undefined ? [] : [
    { type: "dir", path: "etc", mode: 0o755 },
    { type: "dir", path: "etc/bcd", mode: 0o700 },
    {
      type: "file",
      path: "etc/bcd/channel-key",
      data: new TextEncoder().encode(formatChannelKey(capability) + "\n"),
      mode: 0o400,
    },
  ];
  return [
    ...cap,
    { type: "dir", path: "opt", mode: 0o755 },
    { type: "dir", path: "opt/bcd", mode: 0o755 },
    { type: "dir", path: "sbin", mode: 0o755 },
    { type: "file", path: "opt/bcd/guest.js", data: agentJs, mode: 0o644 },
    {
      type: "file",
      path: "sbin/bcd-guest",
      data: sh(`export BCD_GUEST_ALLOW_ALL=1\nexec /bin/deno run ${guestFlags.join(" ")} /opt/bcd/guest.js "$@"`),
      mode: 0o755,
    },
    { type: "file", path: "sbin/bcd-guest-init", data: sh('exec /sbin/bcd-guest init "$1"'), mode: 0o755 },
    {
      type: "file",
      path: "sbin/bcd-guest-layered",
      data: sh(`exec /sbin/bcd-guest init ${CONTROL_PORT_PATH} layered`),
      mode: 0o755,
    },
    { type: "symlink", path: "sbin/bcd-managed-agent", target: "bcd-guest-init" },
    { type: "symlink", path: "sbin/bcd-init-agent", target: "bcd-guest-layered" },
  ];
}

/** Writes the VM's initramfs: a copy of `base` with the guest agent's archive appended. Returns its offset. */
export async function writeGuestInitramfs(
  base: string,
  dest: string,
  agentJs: Uint8Array,
  guestFlags: readonly string[],
  capability?: Uint8Array,
): Promise<number> {
  return await writeInitramfs(base, dest, guestAgentEntries(agentJs, guestFlags, capability), 0o600);
}
