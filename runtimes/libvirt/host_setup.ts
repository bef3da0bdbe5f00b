/**
 * Turning the `libvirt-kvm` runtime on (seed 000 §The runtimes: no configuration key, `virsh` on `PATH` turns it on)
 * and choosing its domain type once, at start: `kvm` where `/dev/kvm` exists and QEMU really runs a KVM vCPU there
 * (a short `qemu-system-x86_64 -accel kvm -cpu host -S` that must quit cleanly: on hosts with a broken nested KVM the
 * device opens but QEMU aborts setting the vCPU's MSRs), `qemu` (TCG) otherwise. The choice and its reason are logged.
 *
 * How QEMU's user reaches the domain's files follows `[helper] libvirt_dynamic_ownership` (`qemu_access.ts`); the
 * helper compares it with `dynamic_ownership` in libvirt's `qemu.conf` at start and warns when they disagree (domains
 * would then fail to open their disks), and under the group scheme names the node's group it opens files to.
 *
 * @module
 */
import type { Logger } from "../../core/log/mod.ts";
import type { DomainType } from "./domain_xml.ts";
import { LibvirtHost } from "./libvirt_host.ts";
import type { QemuAccess } from "./qemu_access.ts";
import { identityOwner } from "./node_owner.ts";
import { CommandVirsh } from "./virsh.ts";

/** Whether `cmd` is on PATH (its `--version` runs). */
export async function onPath(cmd: string): Promise<boolean> {
  try {
    const o = await new Deno.Command(cmd, { args: ["--version"], stdin: "null", stdout: "null", stderr: "null" })
      .output();
    return o.code === 0;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.PermissionDenied) return false;
    throw e;
  }
}

/** The domain type this host runs, and why. */
export async function probeDomainType(
  opts: { kvmDevice?: string; qemu?: string } = {},
): Promise<{ type: DomainType; why: string }> {
  const dev = opts.kvmDevice ?? "/dev/kvm";
  try {
    if (!(await Deno.stat(dev)).isCharDevice) return { type: "qemu", why: `${dev} is not a character device` };
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return { type: "qemu", why: `no ${dev}` };
    throw e;
  }
  const qemu = opts.qemu ?? "qemu-system-x86_64";
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(qemu, {
      args: [
        "-machine",
        "pc,accel=kvm",
        "-cpu",
        "host",
        "-m",
        "16",
        "-nodefaults",
        "-display",
        "none",
        "-S",
        "-monitor",
        "stdio",
      ],
      stdin: "piped",
      stdout: "null",
      stderr: "piped",
      signal: AbortSignal.timeout(30_000),
    }).spawn();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return { type: "qemu", why: `${qemu} is not installed` };
    throw e;
  }
  const w = child.stdin.getWriter();
  try {
    await w.write(new TextEncoder().encode("quit\n"));
    await w.close();
  } catch (e) {
    // QEMU already exited (it aborts at once where KVM is broken): the pipe is gone, and a writer whose write failed
    // is errored, so it is not closed again (that would throw "Writable stream is closed or errored").
    if (!(e instanceof Deno.errors.BrokenPipe)) throw e;
    w.releaseLock();
  }
  const out = await child.output();
  if (out.code === 0) return { type: "kvm", why: `${dev} runs a KVM vCPU` };
  const err = new TextDecoder().decode(out.stderr).trim().split("\n")[0] ?? "";
  return { type: "qemu", why: `QEMU cannot run a KVM vCPU here (exit ${out.code}: ${err.slice(0, 200)})` };
}

/**
 * The `dynamic_ownership` a `qemu.conf` sets (`true` for 1, `false` for 0), or `undefined` when it sets none (libvirt's
 * default is 1). The last assignment wins, as in libvirt's parser; comments and other keys are passed over.
 */
export function qemuConfDynamicOwnership(text: string): boolean | undefined {
  let v: boolean | undefined;
  for (const line of text.split("\n")) {
    const m = /^\s*dynamic_ownership\s*=\s*([01])\s*(#.*)?$/.exec(line);
    if (m) v = m[1] === "1";
  }
  return v;
}

/** The root half of `libvirt-kvm` for the helper, or `undefined` when virsh is not on PATH. */
export async function libvirtBackend(
  dataDir: string,
  opts: {
    log?: Logger;
    hostGpus?: () => Promise<readonly string[]>;
    bridges: readonly string[];
    /** `[helper] libvirt_dynamic_ownership`; `nodeGid`: the node's group (`[helper] node_group`), else the data dir's. */
    dynamicOwnership: boolean;
    nodeGid?: number;
    /** libvirt's `qemu.conf`, read to compare (default `/etc/libvirt/qemu.conf`). */
    qemuConf?: string;
  },
): Promise<LibvirtHost | undefined> {
  if (!(await onPath("virsh"))) {
    opts.log?.info({}, "libvirt-kvm: virsh is not on PATH; runtime off");
    return undefined;
  }
  const { type, why } = await probeDomainType();
  opts.log?.info({ domain_type: type, why }, "libvirt-kvm: domain type chosen");
  if (opts.bridges.length === 0) {
    opts.log?.warn({}, "libvirt-kvm: [helper] instance_bridges is not set; the helper refuses every instance tap");
  } else opts.log?.info({ instance_bridges: opts.bridges }, "libvirt-kvm: instance NICs may join these bridges");
  const qemuAccess: QemuAccess = opts.dynamicOwnership
    ? { scheme: "relabel" }
    : { scheme: "group", ...(opts.nodeGid !== undefined ? { gid: opts.nodeGid } : {}) };
  await _compareQemuConf(opts.qemuConf ?? "/etc/libvirt/qemu.conf", opts.dynamicOwnership, opts.log);
  opts.log?.info(
    { scheme: qemuAccess.scheme, node_gid: opts.nodeGid ?? "the data dir's group" },
    "libvirt-kvm: how QEMU's user reaches the domains' files",
  );
  return new LibvirtHost({
    virsh: new CommandVirsh(),
    dataDir,
    domainType: type,
    owner: identityOwner(dataDir, opts.log),
    hostGpus: opts.hostGpus,
    bridges: opts.bridges,
    qemuAccess,
    log: opts.log,
  });
}

/** Warns when libvirt's `qemu.conf` says another `dynamic_ownership` than `[helper] libvirt_dynamic_ownership`. */
async function _compareQemuConf(path: string, configured: boolean, log?: Logger): Promise<void> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.PermissionDenied) {
      log?.warn({ path }, "libvirt-kvm: qemu.conf unreadable; dynamic_ownership not compared");
      return;
    }
    throw e;
  }
  const libvirt = qemuConfDynamicOwnership(text) ?? true;
  if (libvirt !== configured) {
    log?.warn(
      { path, qemu_conf: libvirt ? 1 : 0, libvirt_dynamic_ownership: configured },
      "libvirt-kvm: qemu.conf's dynamic_ownership disagrees with [helper] libvirt_dynamic_ownership; domains may fail to open their disks",
    );
  }
}
