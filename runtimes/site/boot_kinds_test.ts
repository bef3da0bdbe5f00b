/**
 * `boot.prepareRamdisk` and `boot.cleanUp` with the boot server's routes: kernel and initrd from a loopback https
 * origin (test CA) into the image cache, a real ISO built by genisoimage with Debian's ISOLINUX, leases on a clock the
 * test moves.
 */
import assert from "node:assert/strict";
import { CommandFailed, InvalidPayload } from "../../core/commands/rejection.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { unpackResult } from "../../proto/mod.ts";
import { bmcContext } from "../redfish/redfish_testing.ts";
import { bootHttpHandler, imagePath } from "./boot_http.ts";
import { bootCleanUpHandler, bootPrepareRamdiskHandler } from "./boot_kinds.ts";
import { leaseRoutes } from "./boot_routes.ts";
import { ImageCache } from "./image_cache.ts";
import { type Origin, originCerts, sha256Hex, startOrigin } from "./image_cache_testing.ts";
import { LeaseBook } from "./lease_book.ts";
import { DEBIAN_ISOLINUX } from "./ramdisk_iso.ts";

const KERNEL = new TextEncoder().encode("not really a kernel\n".repeat(300));
const INITRD = new TextEncoder().encode("not really an initramfs\n".repeat(300));
const certs = await originCerts();

async function _missing(): Promise<string | undefined> {
  if (certs === null) return "openssl is absent (the origin's CA is made with it)";
  for (const f of [DEBIAN_ISOLINUX.isolinuxBin, DEBIAN_ISOLINUX.ldlinuxC32, DEBIAN_ISOLINUX.systemdBootEfi]) {
    try {
      await Deno.stat(f);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) {
        return `${f} is absent (Debian isolinux, syslinux-common, systemd-boot-efi)`;
      }
      throw e;
    }
  }
  for (const tool of ["genisoimage", "isoinfo", "mkfs.fat", "mtype"]) {
    const ok = await new Deno.Command(tool, { args: ["--help"], stdout: "null", stderr: "null" }).output().then(
      () => true,
      (e) => {
        if (e instanceof Deno.errors.NotFound) return false;
        throw e;
      },
    );
    if (!ok) return `${tool} is not installed (Debian genisoimage, dosfstools, mtools)`;
  }
  return undefined;
}
const why = await _missing();
if (why) console.warn(`skipping the boot kinds: ${why}`);

interface Rig {
  origin: Origin;
  cache: ImageCache;
  leases: LeaseBook;
  dir: string;
  clock: { now: number };
  http: (path: string) => Promise<Response>;
  prepare: ReturnType<typeof bootPrepareRamdiskHandler>;
  cleanUp: ReturnType<typeof bootCleanUpHandler>;
}

async function withRig(fn: (r: Rig) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-boot-kinds-" });
  const origin = startOrigin({ "/vmlinuz": KERNEL, "/initrd": INITRD }, certs!);
  const clock = { now: 1_000_000 };
  const cache = new ImageCache({ dir: `${dir}/cache`, caCerts: [origin.ca], log: silentLogger() });
  const leases = new LeaseBook(dir, () => clock.now);
  const base = "http://boot.test:8080";
  const handler = bootHttpHandler({
    cache,
    boot: leaseRoutes({ leases, cache, baseUrl: () => base, log: silentLogger() }),
    log: silentLogger(),
  });
  const ports = { cache, leases, bootUrl: base, stageDir: `${dir}/cache/tmp`, now: () => clock.now };
  try {
    await fn({
      origin,
      cache,
      leases,
      dir,
      clock,
      http: (path) => handler(new Request(`${base}${path}`)),
      prepare: bootPrepareRamdiskHandler(ports),
      cleanUp: bootCleanUpHandler(ports),
    });
  } finally {
    await origin.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
}

const MAC = "52:54:00:12:34:56";
const UUID = "4c4c4544-0042-3510-8052-b4c04f4e4b32";

function payload(o: Rig["origin"], extra: Record<string, unknown> = {}) {
  return {
    node_id: "node-7",
    macs: ["52-54-00-12-34-56"],
    system_ids: [UUID.toUpperCase()],
    kernel_url: `${o.base}/vmlinuz`,
    kernel_sha256: sha256Hex(KERNEL),
    initrd_url: `${o.base}/initrd`,
    initrd_sha256: sha256Hex(INITRD),
    cmdline: "console=ttyS0 bcd.join_token=jt-123 bcd.gateway=wss://gw.example",
    lease_ms: 600_000,
    ...extra,
  };
}

async function text(r: Response): Promise<string> {
  return await r.text();
}

async function isoinfo(iso: string, ...args: string[]): Promise<string> {
  return new TextDecoder().decode(await isoBytes(iso, ...args));
}

async function isoBytes(iso: string, ...args: string[]): Promise<Uint8Array> {
  const out = await new Deno.Command("isoinfo", { args: ["-i", iso, ...args], stdout: "piped", stderr: "piped" })
    .output();
  assert(out.success, new TextDecoder().decode(out.stderr));
  return out.stdout;
}

/** A file of a FAT image, read with mtools' `mtype`. */
async function fatFile(img: string, path: string): Promise<Uint8Array> {
  const out = await new Deno.Command("mtype", {
    args: ["-i", img, `::${path}`],
    env: { MTOOLS_SKIP_CHECK: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert(out.success, new TextDecoder().decode(out.stderr));
  return out.stdout;
}

Deno.test({
  name: "boot.prepareRamdisk leases a machine its iPXE script and a bootable ISO until the lease ends",
  ignore: why !== undefined,
  async fn(t) {
    await withRig(async (r) => {
      const { ctx } = bmcContext("boot.prepareRamdisk", payload(r.origin));
      assert.deepEqual(r.prepare.resources!(ctx.command), ["boot:node-7"]);
      const out = await r.prepare.run(ctx);
      const res = unpackResult("boot.prepareRamdisk", { type_url: out.result!.typeUrl, value: out.result!.value });
      assert.equal(res.expires_at_ms, 1_600_000);
      assert.equal(res.boot_url, `http://boot.test:8080/boot/ipxe?mac=${encodeURIComponent(MAC)}`);
      assert.equal(res.iso_url, "http://boot.test:8080/boot/iso/node-7.iso");

      await t.step("the iPXE script, by MAC or by system UUID, boots kernel and initrd from the cache", async () => {
        for (const q of [`mac=${MAC.toUpperCase()}`, `uuid=${UUID}`, `mac=aa:aa:aa:aa:aa:aa&uuid=${UUID}`]) {
          const s = await r.http(`/boot/ipxe?${q}`);
          assert.equal(s.status, 200, q);
          assert.equal(
            await text(s),
            [
              "#!ipxe",
              `kernel http://boot.test:8080${imagePath(sha256Hex(KERNEL))} initrd=initrd ${payload(r.origin).cmdline}`,
              `initrd --name initrd http://boot.test:8080${imagePath(sha256Hex(INITRD))}`,
              "boot",
              "",
            ].join("\n"),
          );
        }
        const k = await r.http(imagePath(sha256Hex(KERNEL)));
        assert.deepEqual(new Uint8Array(await k.arrayBuffer()), KERNEL);
      });
      await t.step(
        "the ISO is El Torito bootable ISOLINUX with kernel, initrd and the lease's command line",
        async () => {
          const iso = await r.http("/boot/iso/node-7.iso");
          assert.equal(iso.status, 200);
          const path = `${r.dir}/got.iso`;
          await Deno.writeFile(path, new Uint8Array(await iso.arrayBuffer()));
          assert.match(await isoinfo(path, "-d"), /El Torito VD version 1 found/);
          const cfg = await isoinfo(path, "-R", "-x", "/isolinux/isolinux.cfg");
          assert.match(cfg, /KERNEL \/bcd\/vmlinuz/);
          assert.match(cfg, /INITRD \/bcd\/initrd/);
          assert.match(cfg, /APPEND console=ttyS0 bcd\.join_token=jt-123 bcd\.gateway=wss:\/\/gw\.example/);
          assert.deepEqual(new TextEncoder().encode(await isoinfo(path, "-R", "-x", "/bcd/vmlinuz")), KERNEL);
          assert.deepEqual(new TextEncoder().encode(await isoinfo(path, "-R", "-x", "/bcd/initrd")), INITRD);
        },
      );
      await t.step(
        "the ISO also boots UEFI: an El Torito EFI entry, a FAT image with systemd-boot as BOOTX64.EFI and the lease's entry",
        async () => {
          const iso = await r.http("/boot/iso/node-7.iso");
          const path = `${r.dir}/got-efi.iso`;
          await Deno.writeFile(path, new Uint8Array(await iso.arrayBuffer()));
          // The boot catalog: validation entry, the BIOS default entry, then the last section header (0x91) for
          // platform 0xEF (EFI) and its no-emulation entry (0x88, bootable).
          const cat = await isoBytes(path, "-R", "-x", "/isolinux/boot.cat");
          assert.deepEqual([cat[64], cat[65], cat[96]], [0x91, 0xef, 0x88]);
          const img = `${r.dir}/efiboot.img`;
          await Deno.writeFile(img, await isoBytes(path, "-R", "-x", "/efi/efiboot.img"));
          assert.deepEqual(
            await fatFile(img, "/EFI/BOOT/BOOTX64.EFI"),
            await Deno.readFile(DEBIAN_ISOLINUX.systemdBootEfi),
          );
          assert.equal(
            new TextDecoder().decode(await fatFile(img, "/loader/loader.conf")),
            "default bcd.conf\ntimeout 0\n",
          );
          assert.equal(
            new TextDecoder().decode(await fatFile(img, "/loader/entries/bcd.conf")),
            "title bcd ramdisk\nlinux /bcd/vmlinuz\ninitrd /bcd/initrd\n" +
              "options console=ttyS0 bcd.join_token=jt-123 bcd.gateway=wss://gw.example\n",
          );
          assert.deepEqual(await fatFile(img, "/bcd/vmlinuz"), KERNEL);
          assert.deepEqual(await fatFile(img, "/bcd/initrd"), INITRD);
        },
      );
      await t.step("a machine without a lease gets 404", async () => {
        for (const p of ["/boot/ipxe?mac=aa:aa:aa:aa:aa:aa", "/boot/ipxe", "/boot/iso/node-8.iso", "/boot/other"]) {
          const s = await r.http(p);
          assert.equal(s.status, 404, p);
          await s.body?.cancel();
        }
      });
      await t.step("the lease survives a restart: a new book over the same file answers it", async () => {
        const again = new LeaseBook(r.dir, () => r.clock.now);
        assert.equal((await again.find({ mac: MAC }))?.node_id, "node-7");
        const mode = (await Deno.stat(`${r.dir}/boot-leases.json`)).mode! & 0o777;
        assert.equal(mode, 0o600, "the file holds join tokens");
      });
      await t.step("an expired lease answers 404", async () => {
        r.clock.now = 1_600_000;
        for (const p of [`/boot/ipxe?mac=${MAC}`, "/boot/iso/node-7.iso"]) {
          const s = await r.http(p);
          assert.equal(s.status, 404, p);
          await s.body?.cancel();
        }
        r.clock.now = 1_000_000;
      });
      await t.step("boot.cleanUp ends it; a second cleanUp removes nothing", async () => {
        const c1 = await r.cleanUp.run(bmcContext("boot.cleanUp", { node_id: "node-7" }).ctx);
        assert.equal(
          unpackResult("boot.cleanUp", { type_url: c1.result!.typeUrl, value: c1.result!.value }).removed,
          true,
        );
        const s = await r.http(`/boot/ipxe?mac=${MAC}`);
        assert.equal(s.status, 404);
        await s.body?.cancel();
        const c2 = await r.cleanUp.run(bmcContext("boot.cleanUp", { node_id: "node-7" }).ctx);
        assert.equal(
          unpackResult("boot.cleanUp", { type_url: c2.result!.typeUrl, value: c2.result!.value }).removed,
          false,
        );
      });
    });
  },
});

Deno.test({
  name: "boot.prepareRamdisk refuses a kernel whose bytes are not its digest: digest-mismatch, no lease",
  ignore: why !== undefined,
  async fn() {
    await withRig(async (r) => {
      const { ctx } = bmcContext("boot.prepareRamdisk", payload(r.origin, { kernel_sha256: sha256Hex("other") }));
      const err = await r.prepare.run(ctx).then(() => undefined, (e) => e);
      assert(err instanceof CommandFailed && err.code === "digest-mismatch", String(err));
      assert.deepEqual(await r.leases.list(), []);
      const s = await r.http(`/boot/ipxe?mac=${MAC}`);
      assert.equal(s.status, 404);
      await s.body?.cancel();
    });
  },
});

Deno.test({
  name: "boot.prepareRamdisk refuses a bad payload invalid-payload before anything is fetched",
  ignore: why !== undefined,
  async fn(t) {
    await withRig(async (r) => {
      const rows: [string, Record<string, unknown>][] = [
        ["no MAC and no system id", { macs: [], system_ids: [] }],
        ["a MAC that is not one", { macs: ["52:54:00:12:34"] }],
        ["a system id that is not a UUID", { system_ids: ["nope"] }],
        ["a node id with a slash", { node_id: "../etc" }],
        ["plain http kernel", { kernel_url: "http://127.0.0.1/vmlinuz" }],
        ["an uppercase digest", { initrd_sha256: sha256Hex(INITRD).toUpperCase() }],
        ["a line break in the command line", { cmdline: "console=ttyS0\nAPPEND evil" }],
        ["a lease over a day", { lease_ms: 24 * 3600_000 + 1 }],
      ];
      for (const [what, extra] of rows) {
        await t.step(what, () => {
          const { ctx } = bmcContext("boot.prepareRamdisk", payload(r.origin, extra));
          assert.throws(() => r.prepare.resources!(ctx.command), InvalidPayload);
        });
      }
      assert.deepEqual(r.origin.seen, []);
    });
  },
});
