/**
 * The VMM behind a launch: `qemu-system-x86_64` (KVM where `/dev/kvm` opens, TCG otherwise) or the fake VMM
 * (`fake_vmm.ts`), which serves the guest agent's worker over a fake root so that every host rule runs without a
 * hypervisor. Both take the same {@link VmmSpec}: the checked files arrive as inherited descriptors 3, 4, … and are
 * named `/proc/self/fd/N`, never by the images' paths (seed 002 §The checked handoff). The VMM runs detached (its own
 * session), with its output in the store's `vmm.log`, and outlives the launch.
 *
 * Deno's `Deno.Command` passes no descriptor beyond the standard three, so the spawn goes through `node:child_process`,
 * whose `stdio` array hands the child further descriptors at 3, 4, …
 *
 * @module
 */
import { spawn } from "node:child_process";
import fs from "node:fs";

/** A disk that the VMM attaches: the checked file's descriptor in the launch, and the guest-visible address. */
export interface VmmDisk {
  readonly fd: number;
  readonly readOnly: boolean;
  /** The address the boot token names (`0xd0003000`); the guest finds the disk by it (virtio-blk serial). */
  readonly address: string;
}

/** What to run. */
export interface VmmSpec {
  readonly kernel: string;
  readonly initramfs: string;
  readonly cmdline: string;
  readonly disks: readonly VmmDisk[];
  readonly controlSocket: string;
  readonly logPath: string;
  readonly memoryMiB?: number;
}

/** A VMM: how to run one. */
export interface Vmm {
  readonly name: string;
  /** The program and its arguments; disk `i` is `/proc/self/fd/${3 + i}`. */
  command(spec: VmmSpec): { cmd: string; args: string[]; env?: Record<string, string> };
}

/** Spawns the VMM detached; returns its pid. The launch keeps no handle to it but its verified identity. */
export function spawnVmm(vmm: Vmm, spec: VmmSpec): number {
  const { cmd, args, env } = vmm.command(spec);
  const log = fs.openSync(spec.logPath, "a", 0o600);
  try {
    const child = spawn(cmd, args, {
      stdio: ["ignore", log, log, ...spec.disks.map((d) => d.fd)],
      detached: true,
      env: { ...Deno.env.toObject(), ...(env ?? {}) },
    });
    if (child.pid === undefined) throw new Error(`cannot spawn ${cmd}`);
    child.unref();
    return child.pid;
  } finally {
    fs.closeSync(log);
  }
}

/**
 * Whether this host offers KVM: `/dev/kvm` opens read-write. That it opens does not prove that it runs a guest (the
 * project's CI machines have such a /dev/kvm), so `--hypervisor qemu-tcg` pins TCG where it does not.
 */
export function kvmUsable(): boolean {
  try {
    fs.closeSync(fs.openSync("/dev/kvm", "r+"));
    return true;
  } catch {
    // ENOENT, EACCES, ENXIO: no usable KVM; TCG then.
    return false;
  }
}

/** The name of the VM's control port, and where the guest finds it (the link udev would make, which `/init` makes). */
export const CONTROL_PORT_NAME = "org.bcd.control";
export const CONTROL_PORT_PATH = `/dev/virtio-ports/${CONTROL_PORT_NAME}`;

/**
 * `qemu-system-x86_64`: virtio disks whose serial is the boot token's address, and the control channel on a
 * virtio-serial port named {@link CONTROL_PORT_NAME}.
 *
 * The control channel is a `virtserialport`, not a `virtconsole` (hvc0): when the host reads slower than the guest
 * writes, so that the control socket is full, QEMU throttles a serial port (the guest's writes wait) but drops what
 * a console could not write (hw/char/virtio-console.c `flush_buf`: "silently dropping console data on EAGAIN";
 * traced here as `virtio_console_flush_buf … out_len -1`, 161,797 of a 256 KiB Echo's bytes lost while the host
 * stalled). A serial port has no tty layer either, so nothing echoes or edits the host's bytes and the host need not
 * wait for the guest to make a tty raw; and QEMU takes no byte from the socket before the guest opened the port.
 */
export class QemuVmm implements Vmm {
  readonly name = "qemu";
  constructor(readonly opts: { accel?: "kvm" | "tcg"; binary?: string } = {}) {}

  command(spec: VmmSpec): { cmd: string; args: string[] } {
    const accel = this.opts.accel ?? (kvmUsable() ? "kvm" : "tcg");
    const args = [
      "-accel",
      accel,
      "-m",
      String(spec.memoryMiB ?? 1024),
      "-nographic",
      "-no-reboot",
      "-nodefaults",
      "-serial",
      "stdio",
      "-kernel",
      spec.kernel,
      "-initrd",
      spec.initramfs,
      "-append",
      spec.cmdline,
      "-device",
      "virtio-serial-pci",
      "-chardev",
      `socket,id=control,path=${spec.controlSocket},server=on,wait=off`,
      "-device",
      `virtserialport,chardev=control,name=${CONTROL_PORT_NAME}`,
    ];
    spec.disks.forEach((d, i) => {
      args.push(
        "-drive",
        `file=/proc/self/fd/${3 + i},format=raw,if=none,id=disk${i}${d.readOnly ? ",readonly=on" : ""}`,
        "-device",
        `virtio-blk-pci,drive=disk${i},serial=${d.address.replace(/^0x/, "")}`,
      );
    });
    return { cmd: this.opts.binary ?? "qemu-system-x86_64", args };
  }
}
