/**
 * Turning the `libvirt-kvm` runtime on (seed 000 §The runtimes: no configuration key, `virsh` on `PATH` turns it on)
 * and choosing its domain type once, at start: `kvm` where `/dev/kvm` exists and QEMU really runs a KVM vCPU there
 * (a short `qemu-system-x86_64 -accel kvm -cpu host -S` that must quit cleanly: on hosts with a broken nested KVM the
 * device opens but QEMU aborts setting the vCPU's MSRs), `qemu` (TCG) otherwise. The choice and its reason are logged.
 *
 * How QEMU's user reaches the domain's files follows `[helper] libvirt_dynamic_ownership` (`qemu_access.ts`); the
 * helper compares it with `dynamic_ownership` in libvirt's `qemu.conf` at start, and under the group scheme checks
 * that QEMU's user is in the node's group, and warns when not (domains would then fail to open their disks); `doctor`
 * shows the same as its `libvirt-ownership` line ({@link libvirtOwnershipFacts}).
 *
 * @module
 */
import { libvirtOwnershipCheck, type LibvirtOwnershipFacts } from "../../core/doctor/host_facts.ts";
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

/** QEMU's user a `qemu.conf` names (`user = "…"`, the last one), else Debian's default `libvirt-qemu`. */
export function qemuConfUser(text: string): string {
  let user = "libvirt-qemu";
  for (const line of text.split("\n")) {
    const m = /^\s*user\s*=\s*"([^"\s]{1,64})"\s*(#.*)?$/.exec(line);
    if (m) user = m[1]!;
  }
  return user;
}

/** The groups of `user` (`id -G`; a `+<uid>` as libvirt writes a number), or `null` for a user the host lacks. */
async function _groupsOf(user: string): Promise<number[] | null> {
  const out = await new Deno.Command("id", {
    args: ["-G", user.replace(/^\+/, "")],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  if (!out.success) return null;
  return new TextDecoder().decode(out.stdout).trim().split(/\s+/).map(Number);
}

/**
 * What the helper and `doctor` know of this host's deployment: the key beside libvirt's `qemu.conf`, QEMU's user and
 * whether it is in the node's group (`nodeGid`, else the data dir's group).
 */
export async function libvirtOwnershipFacts(
  o: { dynamicOwnership: boolean; dataDir: string; nodeGid?: number; qemuConf?: string },
): Promise<LibvirtOwnershipFacts> {
  let text: string | null = null;
  try {
    text = await Deno.readTextFile(o.qemuConf ?? "/etc/libvirt/qemu.conf");
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound || e instanceof Deno.errors.PermissionDenied)) throw e;
  }
  let nodeGid: number | null = o.nodeGid ?? null;
  if (nodeGid === null) {
    try {
      nodeGid = (await Deno.lstat(o.dataDir)).gid;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  }
  const qemuUser = qemuConfUser(text ?? "");
  const groups = await _groupsOf(qemuUser);
  return {
    configured: o.dynamicOwnership,
    qemuConf: text === null ? null : qemuConfDynamicOwnership(text) ?? true,
    qemuUser,
    nodeGid,
    userInGroup: groups === null ? null : nodeGid !== null && groups.includes(nodeGid),
  };
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
  const facts = await libvirtOwnershipFacts({ ...opts, dataDir });
  const line = libvirtOwnershipCheck(facts);
  if (line.status !== "ok") opts.log?.warn({ ...facts, hint: line.hint }, `libvirt-kvm: ${line.detail}`);
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
