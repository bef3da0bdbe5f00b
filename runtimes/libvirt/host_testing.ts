/**
 * Test support: a data dir laid out as the node lays it out for `libvirt-kvm` (a base image named by its digest, and
 * per instance a directory with a qcow2 overlay on it) and a {@link LibvirtHost} over it, on the fake virsh or on a
 * real one.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { DomainPlan } from "../../core/converge/instances/domain_plan.ts";
import { makeQcow2, sha256Hex } from "../../fixtures/libvirt/image_server.ts";
import { FakeVirsh } from "./fake_virsh.ts";
import { LibvirtHost, type LibvirtHostOptions } from "./libvirt_host.ts";
import type { Virsh } from "./virsh.ts";

/** Writes the base image into `dir` and returns a plan builder for instances on it. */
export async function baseImage(dir: string): Promise<(id: string) => DomainPlan> {
  const base = await makeQcow2(dir, "b.qcow2", "16M");
  const sha = await sha256Hex(base);
  await Deno.mkdir(`${dir}/libvirt/images`, { recursive: true });
  await Deno.writeFile(`${dir}/libvirt/images/${sha}.qcow2`, base);
  return (id: string): DomainPlan => ({
    id,
    allocationId: "a1",
    vcpus: 1,
    memoryMiB: 64,
    image: { sha256: sha, format: "qcow2" },
    nics: [],
    gpus: [],
    placement: null,
    seed: false,
    restoredFrom: null,
  });
}

/** The instance's directory with its overlay (`qemu-img create -u` on the plan's base image), as the node makes it. */
export async function instanceFiles(dir: string, plan: DomainPlan): Promise<string> {
  const inst = `${dir}/libvirt/instances/${plan.id}`;
  await Deno.mkdir(inst, { recursive: true, mode: 0o700 });
  const base = `${dir}/libvirt/images/${plan.image!.sha256}.qcow2`;
  const out = await new Deno.Command("qemu-img", {
    args: ["create", "-q", "-f", "qcow2", "-u", "-F", "qcow2", "-b", base, `${inst}/disk.qcow2`, "16M"],
  }).output();
  assert.ok(out.success);
  await Deno.chmod(`${inst}/disk.qcow2`, 0o600);
  return inst;
}

/** A temp data dir with `n` domains `d0`… defined on `virsh` (the fake one unless given). */
export async function hostWithDomains<V extends Virsh = FakeVirsh>(
  n: number,
  opts: { virsh?: V; options?: Partial<LibvirtHostOptions> } = {},
) {
  const dir = await Deno.makeTempDir({ prefix: "bcd-lvhost-" });
  const virsh = opts.virsh ?? (new FakeVirsh() as unknown as V);
  const host = new LibvirtHost({
    virsh,
    dataDir: dir,
    domainType: "qemu",
    owner: "node-a",
    bridges: [],
    ...opts.options,
  });
  const plan = await baseImage(dir);
  for (let i = 0; i < n; i++) {
    await instanceFiles(dir, plan(`d${i}`));
    assert.deepEqual(await host.define(plan(`d${i}`)), {});
  }
  return { dir, virsh, host, plan };
}
