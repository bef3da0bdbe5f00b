import assert from "node:assert/strict";
import { DEFAULT_KERNEL_DIR, findKernel } from "./kernel.ts";
import { modinfoFields, moduleDepends, ModuleFormatError, moduleName, resolveModules } from "./kernel_modules.ts";
import { fakeModule, writeModuleTree } from "./kernel_modules_testing.ts";

Deno.test("modinfoFields() reads the .modinfo section's key=value strings, a repeated key kept in order", () => {
  const elf = fakeModule(["alias=pci:v1", "alias=pci:v2", "depends=virtio,virtio_ring", "name=virtio_blk"]);
  assert.deepEqual(modinfoFields(elf), [
    ["alias", "pci:v1"],
    ["alias", "pci:v2"],
    ["depends", "virtio,virtio_ring"],
    ["name", "virtio_blk"],
  ]);
  assert.deepEqual(moduleDepends(elf), ["virtio", "virtio_ring"]);
  assert.deepEqual(moduleDepends(fakeModule(["depends="])), []);
});

Deno.test("modinfoFields() refuses what is not an ELF64 module, and section headers outside the file", async (t) => {
  const good = fakeModule(["depends="]);
  const rows: [string, Uint8Array, RegExp][] = [
    ["not ELF", new TextEncoder().encode("#!/bin/sh\n".padEnd(80, " ")), /not an ELF file/],
    ["too short", good.slice(0, 40), /not an ELF file/],
    [
      "ELF32",
      (() => {
        const b = good.slice();
        b[4] = 1;
        return b;
      })(),
      /not ELF64 little-endian/,
    ],
    ["truncated section headers", good.slice(0, good.length - 10), /section headers outside the file/],
    [
      "a section past the end",
      (() => {
        const b = good.slice();
        const v = new DataView(b.buffer);
        const shoff = Number(v.getBigUint64(0x28, true));
        v.setBigUint64(shoff + 2 * 64 + 0x20, 1n << 40n, true);
        return b;
      })(),
      /section 2 outside the file/,
    ],
  ];
  for (const [what, bytes, re] of rows) {
    await t.step(what, () => {
      assert.throws(() => modinfoFields(bytes, what), (e) => e instanceof ModuleFormatError && re.test(e.message));
    });
  }
});

Deno.test("moduleName() spells a module as the kernel does", () => {
  assert.equal(moduleName("kernel/drivers/nvme/host/nvme-core.ko"), "nvme_core");
  assert.equal(moduleName("nls_iso8859-1"), "nls_iso8859_1");
});

Deno.test("resolveModules() orders dependencies first, once each, and reports built-in and absent wanted modules", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await writeModuleTree(dir, {
      "drivers/virtio/virtio_ring.ko": [],
      "drivers/virtio/virtio.ko": ["virtio_ring"],
      "drivers/virtio/virtio_pci.ko": ["virtio", "virtio_ring"],
      "drivers/block/virtio_blk.ko": ["virtio", "virtio_ring"],
      "net/core/failover.ko": [],
      "drivers/net/net_failover.ko": ["failover"],
      "drivers/net/virtio_net.ko": ["net_failover", "virtio", "virtio_ring"],
      "drivers/scsi/sd_mod.ko": ["scsi_mod"],
      "drivers/scsi/scsi_mod.ko": [],
    }, ["drivers/nvme/host/nvme", "drivers/nvme/host/nvme-core"]);
    const r = await resolveModules(dir, ["virtio_pci", "virtio_blk", "virtio_net", "nvme", "e1000e", "sd_mod"]);
    assert.deepEqual(r.load.map((m) => m.name), [
      "virtio_ring",
      "virtio",
      "virtio_pci",
      "virtio_blk",
      "failover",
      "net_failover",
      "virtio_net",
      "scsi_mod",
      "sd_mod",
    ]);
    assert.equal(r.load[0]!.path, `${dir}/kernel/drivers/virtio/virtio_ring.ko`);
    assert.deepEqual(r.builtin, ["nvme"]);
    assert.deepEqual(r.absent, ["e1000e"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("resolveModules() fails on a dependency the kernel lacks and on a dependency cycle, naming them", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await writeModuleTree(dir, { "a.ko": ["b"], "b.ko": ["a"], "c.ko": ["gone"] });
    await assert.rejects(resolveModules(dir, ["a"]), /module dependency cycle: a -> b -> a/);
    await assert.rejects(resolveModules(dir, ["c"]), /c depends on gone, which this kernel has neither/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const kernel = findKernel(Deno.env.get("BCD_TEST_KERNEL_DIR") ?? DEFAULT_KERNEL_DIR);
Deno.test({
  name: "resolveModules() on the Debian cloud kernel: virtio_net after failover and net_failover, nvme built in",
  ignore: "missing" in kernel,
  async fn() {
    if ("missing" in kernel) return;
    const r = await resolveModules(kernel.modules, ["virtio_net", "nvme"]);
    const names = r.load.map((m) => m.name);
    assert.ok(names.indexOf("net_failover") < names.indexOf("virtio_net"), names.join(" "));
    assert.ok(names.indexOf("failover") < names.indexOf("net_failover"), names.join(" "));
    assert.deepEqual(r.builtin, ["nvme"]);
  },
});
if ("missing" in kernel) console.error(`skipped the cloud kernel's modules: ${kernel.missing}`);
