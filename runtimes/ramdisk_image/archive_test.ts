/**
 * What goes into the ramdisk's initramfs, on stand-in inputs (a busybox that lists four applets, a kexec and a Deno
 * that are scripts, a module tree of fake modules): the listing names every part with its mode, GNU cpio reads the
 * archive back with the same paths, and the build writes the pair, the listing and an ISO whose ISOLINUX config
 * carries the command line.
 */
import assert from "node:assert/strict";
import { newcArchive } from "../../core/images/newc.ts";
import { contentsListing, ramdiskConfig, ramdiskContents, type RamdiskInputs } from "./archive.ts";
import { buildRamdisk } from "./build.ts";
import { writeModuleTree } from "./kernel_modules_testing.ts";
import { parseLdd } from "./shared_libraries.ts";

async function has(cmd: string): Promise<boolean> {
  const o = await new Deno.Command("sh", { args: ["-c", `command -v ${cmd}`], stdout: "null" }).output();
  return o.success;
}

/** Stand-in inputs under `dir`. */
async function inputs(dir: string, ca?: string): Promise<RamdiskInputs> {
  await Deno.writeTextFile(`${dir}/busybox`, "#!/bin/sh\nprintf 'sh\\nls\\n[\\nudhcpc\\n'\n", { mode: 0o755 });
  await Deno.writeTextFile(`${dir}/kexec`, "#!/bin/sh\necho kexec\n", { mode: 0o755 });
  await Deno.writeTextFile(`${dir}/deno`, "#!/bin/sh\necho deno\n", { mode: 0o755 });
  for (const role of ["ramdisk", "helper"]) {
    await Deno.mkdir(`${dir}/dist/bcd-${role}`, { recursive: true });
    await Deno.link(`${dir}/deno`, `${dir}/dist/bcd-${role}/deno`);
    await Deno.writeTextFile(`${dir}/dist/bcd-${role}/bcd-${role}`, "#!/bin/sh\n", { mode: 0o755 });
    await Deno.writeTextFile(`${dir}/dist/bcd-${role}/bcd-${role}.js`, `// ${role}\n`);
  }
  await writeModuleTree(`${dir}/modules`, {
    "drivers/virtio/virtio.ko": [],
    "drivers/block/virtio_blk.ko": ["virtio"],
  }, ["drivers/nvme/host/nvme"]);
  return {
    modules: `${dir}/modules`,
    busybox: `${dir}/busybox`,
    tools: { "/usr/sbin/kexec": `${dir}/kexec` },
    bundles: { ramdisk: `${dir}/dist/bcd-ramdisk`, helper: `${dir}/dist/bcd-helper` },
    wantModules: ["virtio_blk", "nvme", "e1000e"],
    ...(ca === undefined ? {} : { gatewayCaPem: ca }),
  };
}

Deno.test("ramdiskContents() lists busybox's applets, kexec, one Deno for both bundles, the modules in load order, the config and the init", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { entries, modules } = await ramdiskContents(await inputs(dir));
    const listing = contentsListing(entries);
    const has = (line: string) => assert.ok(listing.includes(line), `${line} in\n${listing.join("\n")}`);
    has(`f 0755 ${(await Deno.readFile(`${dir}/busybox`)).length} bin/busybox`);
    for (const a of ["sh", "ls", "[", "udhcpc"]) has(`l bin/${a} -> busybox`);
    has(`f 0755 ${(await Deno.readFile(`${dir}/kexec`)).length} usr/sbin/kexec`);
    has(`f 0755 ${(await Deno.readFile(`${dir}/deno`)).length} opt/bcd/deno`);
    for (const role of ["ramdisk", "helper"]) {
      has(`l opt/bcd/bcd-${role}/deno -> ../deno`);
      has(`f 0755 10 opt/bcd/bcd-${role}/bcd-${role}`);
      assert.ok(listing.some((l) => l.startsWith("f 0644 ") && l.endsWith(` opt/bcd/bcd-${role}/bcd-${role}.js`)));
    }
    assert.equal(listing.filter((l) => l.endsWith("/deno") && l.startsWith("f ")).length, 1, "one Deno");
    assert.deepEqual(modules.load.map((m) => m.name), ["virtio", "virtio_blk"]);
    assert.deepEqual(modules.builtin, ["nvme"]);
    assert.deepEqual(modules.absent, ["e1000e"]);
    const text = (p: string) => {
      const e = entries.find((x) => x.path === p);
      assert.ok(e?.type === "file", p);
      return new TextDecoder().decode(e.data);
    };
    assert.equal(text("lib/modules/load-order"), "virtio\nvirtio_blk\n");
    assert.ok(listing.some((l) => /^f 0644 \d+ lib\/modules\/virtio_blk\.ko$/.test(l)));
    assert.equal(text("etc/bcd/config.toml"), ramdiskConfig(false));
    assert.match(text("etc/bcd/config.toml"), /\[helper\]\nrole = "ramdisk"/);
    assert.ok(!listing.some((l) => l.endsWith("gateway-ca.pem")), "no CA unless given");
    for (const p of ["init", "etc/bcd/cmdline.sh", "etc/bcd/disk_links.sh", "etc/bcd/udhcpc.sh"]) {
      assert.ok(listing.some((l) => l.startsWith("f 0755 ") && l.endsWith(` ${p}`)), p);
    }
    assert.match(text("init"), /^#!\/bin\/sh\n/);
    // Every parent directory comes before what is in it.
    const seen = new Set<string>();
    for (const e of entries) {
      const parent = e.path.split("/").slice(0, -1).join("/");
      assert.ok(parent === "" || seen.has(parent), `${e.path} before its directory`);
      if (e.type === "dir") seen.add(e.path);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ramdiskContents() builds in the gateway's CA and names it in the config when a site gives one", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    const { entries } = await ramdiskContents(await inputs(dir, pem));
    const ca = entries.find((e) => e.path === "etc/bcd/gateway-ca.pem");
    assert.ok(ca?.type === "file");
    assert.equal(new TextDecoder().decode(ca.data), pem);
    const cfg = entries.find((e) => e.path === "etc/bcd/config.toml");
    assert.ok(cfg?.type === "file");
    assert.match(new TextDecoder().decode(cfg.data), /\[gateway\]\nca_file = "\/etc\/bcd\/gateway-ca\.pem"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ramdiskContents() refuses bundles that carry two different Deno binaries", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const inp = await inputs(dir);
    await Deno.remove(`${dir}/dist/bcd-helper/deno`);
    await Deno.writeTextFile(`${dir}/dist/bcd-helper/deno`, "#!/bin/sh\necho another deno\n", { mode: 0o755 });
    await assert.rejects(ramdiskContents(inp), /differ: the ramdisk carries one Deno for both/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const noCpio = !(await has("cpio"));
if (noCpio) console.error("skipped reading the archive back: cpio is not installed (apt cpio)");
Deno.test({
  name: "the listing names exactly what GNU cpio reads back from the newc archive, in the same order",
  ignore: noCpio,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const { entries } = await ramdiskContents(await inputs(dir));
      await Deno.writeFile(`${dir}/initrd`, newcArchive(entries));
      const out = await new Deno.Command("sh", { args: ["-c", `cpio -it --quiet < ${dir}/initrd`], stdout: "piped" })
        .output();
      assert.ok(out.success);
      const paths = contentsListing(entries).map((l) =>
        l.startsWith("l ") ? l.slice(2).split(" -> ")[0] : l.split(" ").at(-1)
      );
      assert.deepEqual(new TextDecoder().decode(out.stdout).trimEnd().split("\n"), paths);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

const noIso = !(await has("genisoimage")) || !(await has("isoinfo")) ||
  !(await Deno.stat("/usr/lib/ISOLINUX/isolinux.bin").then(() => true, () => false));
if (noIso) {
  console.error("skipped the ISO build: genisoimage, isoinfo or isolinux is missing (apt genisoimage isolinux)");
}
Deno.test({
  name:
    "buildRamdisk() writes vmlinuz, initrd, its listing and an ISO whose ISOLINUX config boots them with the command line",
  ignore: noIso,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const inp = await inputs(dir);
      await Deno.writeTextFile(`${dir}/vmlinuz-test`, "not really a kernel\n");
      const a = await buildRamdisk({
        ...inp,
        out: `${dir}/out`,
        kernel: { version: "test", vmlinuz: `${dir}/vmlinuz-test`, modules: inp.modules },
        isoCmdline: "console=ttyS0 bcd.join_token=t1 bcd.join_url=https://10.0.2.100/v1/join",
      });
      assert.equal(await Deno.readTextFile(a.vmlinuz), "not really a kernel\n");
      assert.equal((await Deno.stat(a.initrd)).size, a.sizes.initrd);
      assert.match(await Deno.readTextFile(a.contents), /^d 0755 dev\n/);
      assert.ok(a.iso && a.sizes.iso && a.sizes.iso > a.sizes.initrd);
      const cfg = await new Deno.Command("isoinfo", {
        args: ["-i", a.iso, "-R", "-x", "/isolinux/isolinux.cfg"],
        stdout: "piped",
      }).output();
      const text = new TextDecoder().decode(cfg.stdout);
      assert.match(text, /KERNEL \/bcd\/vmlinuz\n\s+INITRD \/bcd\/initrd\n\s+APPEND console=ttyS0 bcd\.join_token=t1 /);
      const files = [...Deno.readDirSync(`${dir}/out`)].map((e) => e.name).sort();
      assert.deepEqual(files, ["bcd-ramdisk.iso", "initrd", "initrd.contents", "vmlinuz"], "no stage left behind");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("parseLdd() takes the library paths and the loader, and fails on a library ldd cannot find", () => {
  const text = [
    "\tlinux-vdso.so.1 (0x00007ffd1b5e2000)",
    "\tlibdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f1)",
    "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f2)",
    "\t/lib64/ld-linux-x86-64.so.2 (0x00007f3)",
  ].join("\n");
  assert.deepEqual(parseLdd(text), [
    "/lib/x86_64-linux-gnu/libdl.so.2",
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib64/ld-linux-x86-64.so.2",
  ]);
  assert.throws(() => parseLdd("\tlibxenctrl.so.4.17 => not found\n"), /libxenctrl\.so\.4\.17 => not found/);
});
