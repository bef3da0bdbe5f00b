import assert from "node:assert/strict";
import { type DomainPlan, planProblem } from "../../core/converge/instances/domain_plan.ts";
import { tapName } from "../../core/converge/instances/tap_name.ts";
import { BCD_NS, domainUuid, readMark, renderDomainXml } from "./domain_xml.ts";

const PATHS = { libvirtDir: "/var/lib/bcd/libvirt", volumesDir: "/var/lib/bcd/volumes" };
const SHA = "a".repeat(64);

function plan(over: Partial<DomainPlan> = {}): DomainPlan {
  return {
    id: "i-1",
    allocationId: "alloc-1",
    vcpus: 2,
    memoryMiB: 2048,
    image: { sha256: SHA, format: "qcow2" },
    nics: [{ mac: "52:54:00:00:00:01", bridge: "br0" }, { mac: "52:54:00:00:00:02", bridge: "br1" }],
    gpus: [],
    placement: null,
    seed: true,
    restoredFrom: null,
    ...over,
  };
}

Deno.test("renderDomainXml() names only bcd's files and devices: overlay with its backing chain, seed cdrom, taps, serial log", () => {
  const xml = renderDomainXml(plan(), "kvm", PATHS, "node-a");
  const files = [...xml.matchAll(/file='([^']+)'/g)].map((m) => m[1]);
  assert.deepEqual(files, [
    "/var/lib/bcd/libvirt/instances/i-1/disk.qcow2",
    `/var/lib/bcd/libvirt/images/${SHA}.qcow2`,
    "/var/lib/bcd/libvirt/instances/i-1/seed.iso",
    "/var/lib/bcd/libvirt/instances/i-1/console.log",
  ]);
  assert.match(xml, /<domain type='kvm'>/);
  assert.match(xml, /<cpu mode='host-passthrough'/);
  assert.match(xml, new RegExp(`<target dev='${tapName("i-1", 0)}'/>[\\s\\S]*<target dev='${tapName("i-1", 1)}'/>`));
  assert.match(xml, /<source bridge='br0'\/>/);
  assert.match(xml, /<memballoon model='none'\/>/);
  assert.match(xml, new RegExp(`<uuid>${domainUuid("i-1")}</uuid>`));
  assert.doesNotMatch(xml, /qemu:commandline|type='block'|<hostdev/);
});

Deno.test("renderDomainXml() leaves the CPU element out under TCG and boots an iso from a cdrom onto a blank disk", () => {
  const xml = renderDomainXml(plan({ image: { sha256: SHA, format: "iso" }, seed: false }), "qemu", PATHS, "node-a");
  assert.match(xml, /<domain type='qemu'>/);
  assert.doesNotMatch(xml, /<cpu /);
  assert.match(xml, /disk\.qcow2'\/>\s*<backingStore\/>/);
  assert.match(xml, new RegExp(`images/${SHA}\\.iso'/>[\\s\\S]*<readonly/>\\s*<boot order='1'/>`));
});

Deno.test("renderDomainXml() maps placement: vcpupin for one CPU per vCPU, a floating cpuset, strict numatune, locked huge pages, a balloon when asked", async (t) => {
  await t.step("pinned", () => {
    const xml = renderDomainXml(
      plan({ placement: { cpus: "4-5", mems: "0", hugepages: "2M", balloon: false } }),
      "kvm",
      PATHS,
      "node-a",
    );
    assert.match(xml, /<vcpupin vcpu='0' cpuset='4'\/>\s*<vcpupin vcpu='1' cpuset='5'\/>/);
    assert.match(xml, /<numatune><memory mode='strict' nodeset='0'\/><\/numatune>/);
    assert.match(xml, /<page size='2048' unit='KiB'\/><\/hugepages><locked\/>/);
  });
  await t.step("floating, ballooned", () => {
    const xml = renderDomainXml(
      plan({ placement: { cpus: "0-7", mems: "", hugepages: "none", balloon: true } }),
      "kvm",
      PATHS,
      "node-a",
    );
    assert.match(xml, /<vcpu placement='static' cpuset='0-7'>2<\/vcpu>/);
    assert.doesNotMatch(xml, /<vcpupin|<numatune|<hugepages/);
    assert.match(xml, /<memballoon model='virtio'><stats period='10'\/><\/memballoon>/, "with statistics: the usage");
  });
  await t.step("a GPU is a managed PCI hostdev at its inventory address", () => {
    const xml = renderDomainXml(
      plan({ gpus: [{ uuid: "GPU-1", pciBusId: "00000000:17:00.0" }] }),
      "kvm",
      PATHS,
      "node-a",
    );
    assert.match(
      xml,
      /<hostdev mode='subsystem' type='pci' managed='yes'>\s*<source><address domain='0x0000' bus='0x17' slot='0x00' function='0x0'\/>/,
    );
  });
});

Deno.test("readMark() reads bcd's mark back as libvirt rewrites it, and finds none in a foreign domain", () => {
  const p = plan({ allocationId: `a<&>"'b` });
  const xml = renderDomainXml(p, "qemu", PATHS, "node-a");
  assert.deepEqual(readMark(xml), { plan: p, node: "node-a" });
  const rewritten = xml.replace(`xmlns:bcd="${BCD_NS}"`, `xmlns:x='${BCD_NS}'`).replaceAll("bcd:", "x:")
    .replaceAll("&quot;", "&#34;");
  assert.deepEqual(readMark(rewritten), { plan: p, node: "node-a" });
  assert.equal(readMark("<domain type='qemu'><name>x</name><metadata><other/></metadata></domain>"), undefined);
  assert.equal(readMark(xml.replace("<bcd:plan>{", "<bcd:plan>{broken")), undefined);
});

Deno.test("readMark() finds no owner, and so no mark, where the node is missing or not a node id", () => {
  const xml = renderDomainXml(plan(), "qemu", PATHS, "node-a");
  assert.equal(readMark(xml.replace("<bcd:node>node-a</bcd:node>", "")), undefined);
  assert.equal(readMark(xml.replace("<bcd:node>node-a</bcd:node>", "<bcd:node>node a</bcd:node>")), undefined);
  assert.equal(readMark(xml.replace("<bcd:node>node-a</bcd:node>", "<bcd:node></bcd:node>")), undefined);
});

Deno.test("planProblem() refuses, field by field, what no domain of bcd's may carry", () => {
  const rows: Array<[string, Partial<DomainPlan>, string]> = [
    ["an id that is a path", { id: "../etc" }, "id"],
    ["no vCPU", { vcpus: 0 }, "vcpus"],
    ["a fraction of a MiB", { memoryMiB: 1.5 }, "memoryMiB"],
    ["an uppercase digest", { image: { sha256: "A".repeat(64), format: "qcow2" } }, "image.sha256"],
    ["a format bcd does not keep", { image: { sha256: SHA, format: "vmdk" as "raw" } }, "image.format"],
    ["a multicast MAC", { nics: [{ mac: "01:00:5e:00:00:01", bridge: "br0" }] }, "nics[0].mac"],
    ["a bridge named like a tap", { nics: [{ mac: "52:54:00:00:00:01", bridge: "bcbr" }] }, "nics[0].bridge"],
    ["a bridge with a quote", { nics: [{ mac: "52:54:00:00:00:01", bridge: "br'0" }] }, "nics[0].bridge"],
    ["a GPU address that is not one", { gpus: [{ uuid: "GPU-1", pciBusId: "/dev/sda" }] }, "gpus[0].pciBusId"],
    [
      "fewer CPUs than vCPUs",
      { placement: { cpus: "3", mems: "", hugepages: "none", balloon: false } },
      "placement.cpus",
    ],
    [
      "a balloon with huge pages",
      { placement: { cpus: "0-1", mems: "", hugepages: "2M", balloon: true } },
      "placement.balloon",
    ],
    ["memory not in whole 1G pages", {
      memoryMiB: 1536,
      placement: { cpus: "0-1", mems: "0", hugepages: "1G", balloon: false },
    }, "memoryMiB"],
  ];
  for (const [what, over, field] of rows) assert.equal(planProblem(plan(over))?.[0], field, what);
  assert.equal(planProblem(plan()), undefined);
});

Deno.test("renderDomainXml() attaches volumes as raw virtio disks on the volume store, by serial, read-only when asked", () => {
  const xml = renderDomainXml(
    plan({
      volumes: [
        { id: "data-1", serial: "data", readOnly: false, dev: "vdb" },
        { id: "ref_2", serial: "ref-2", readOnly: true, dev: "vdc" },
      ],
    }),
    "qemu",
    PATHS,
    "node-a",
  );
  const disks = [...xml.matchAll(/<disk type='file' device='disk'>[\s\S]*?<\/disk>/g)].map((m) => m[0]);
  assert.equal(disks.length, 3);
  assert.match(disks[1]!, /<driver name='qemu' type='raw'\/>/);
  assert.match(disks[1]!, /<source file='\/var\/lib\/bcd\/volumes\/data-1\.raw'\/>/);
  assert.match(disks[1]!, /<target dev='vdb' bus='virtio'\/>\s*<serial>data<\/serial>\s*<\/disk>/);
  assert.match(disks[2]!, /<source file='\/var\/lib\/bcd\/volumes\/ref_2\.raw'\/>[\s\S]*<serial>ref-2<\/serial>/);
  assert.match(disks[2]!, /<readonly\/>/);
  assert.deepEqual(readMark(xml)?.plan.volumes?.map((v) => v.dev), ["vdb", "vdc"]);
});

Deno.test("planProblem() refuses bad volumes: the grammar, the devices, each once", async (t) => {
  const v = { id: "v", serial: "s", readOnly: false, dev: "vdb" };
  const rows: [string, DomainPlan["volumes"], RegExp][] = [
    ["an id with a slash", [{ ...v, id: "a/b" }], /volumes\[0\]\.id/],
    ["a serial with uppercase", [{ ...v, serial: "S" }], /volumes\[0\]\.serial/],
    ["the root disk's device", [{ ...v, dev: "vda" }], /volumes\[0\]\.dev/],
    ["the rebind disk's device", [{ ...v, dev: "vdz" }], /volumes\[0\]\.dev/],
    ["one volume twice", [v, { ...v, dev: "vdc" }], /volumes\[1\]\.id/],
    ["more than 24", Array.from({ length: 25 }, (_, n) => ({ ...v, id: `v${n}` })), /^volumes$/],
  ];
  for (const [name, volumes, field] of rows) {
    await t.step(name, () => assert.match(planProblem(plan({ volumes }))?.[0] ?? "", field));
  }
});
