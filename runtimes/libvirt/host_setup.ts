/**
 * Turning the `libvirt-kvm` runtime on (seed 000 §The runtimes: no configuration key, `virsh` on `PATH` turns it on)
 * and choosing its domain type once, at start: `kvm` where `/dev/kvm` exists and QEMU really runs a KVM vCPU there
 * (a short `qemu-system-x86_64 -accel kvm -cpu host -S` that must quit cleanly: on hosts with a broken nested KVM the
 * device opens but QEMU aborts setting the vCPU's MSRs), `qemu` (TCG) otherwise. The choice and its reason are logged.
 *
 * @module
 */
import type { Logger } from "../../core/log/mod.ts";
import type { DomainType } from "./domain_xml.ts";
import { LibvirtHost } from "./libvirt_host.ts";
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

/** The root half of `libvirt-kvm` for the helper, or `undefined` when virsh is not on PATH. */
export async function libvirtBackend(
  dataDir: string,
  opts: { log?: Logger; hostGpus?: () => Promise<readonly string[]>; bridges: readonly string[] },
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
  return new LibvirtHost({
    virsh: new CommandVirsh(),
    dataDir,
    domainType: type,
    owner: identityOwner(dataDir, opts.log),
    hostGpus: opts.hostGpus,
    bridges: opts.bridges,
    log: opts.log,
  });
}
