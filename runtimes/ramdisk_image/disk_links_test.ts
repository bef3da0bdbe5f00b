/**
 * The ramdisk init's `/dev/disk/by-id` links (`disk_links.sh`), run by the static busybox's sh over a sysfs and a
 * `/dev` the test lays out: the names udev would give virtio, NVMe and SCSI disks and their partitions, and links to
 * devices that are gone removed.
 */
import assert from "node:assert/strict";
import { isDiskId } from "../../core/disks/disk_id.ts";

const BUSYBOX = "/bin/busybox";
const SCRIPT = new URL("./disk_links.sh", import.meta.url).pathname;
const missing = await Deno.stat(BUSYBOX).then(() => undefined, (e) => {
  if (e instanceof Deno.errors.NotFound) return `${BUSYBOX} is missing (apt busybox-static)`;
  throw e;
});
if (missing) console.error(`skipped the disk_links.sh tests: ${missing}`);

async function lay(root: string, files: Record<string, string>): Promise<void> {
  for (const [p, text] of Object.entries(files)) {
    await Deno.mkdir(`${root}/${p.slice(0, Math.max(0, p.lastIndexOf("/")))}`, { recursive: true });
    await Deno.writeTextFile(`${root}/${p}`, text);
  }
}

async function links(dev: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for await (const e of Deno.readDir(`${dev}/disk/by-id`)) {
    out[e.name] = await Deno.readLink(`${dev}/disk/by-id/${e.name}`);
  }
  return out;
}

async function run(dev: string, sys: string): Promise<void> {
  const out = await new Deno.Command(BUSYBOX, {
    args: ["sh", "-c", `. ${SCRIPT}; bcd_disk_links ${dev} ${sys}`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
}

Deno.test({
  name:
    "disk_links.sh names virtio, NVMe and SCSI disks and their partitions as udev would, and drops links to gone devices",
  ignore: missing !== undefined,
  async fn() {
    const root = await Deno.makeTempDir();
    const dev = `${root}/dev`;
    const sys = `${root}/sys`;
    try {
      await lay(sys, {
        "block/vda/serial": "bcd-disk-1\n",
        "block/vda/vda1/partition": "1\n",
        "block/vda/vda2/partition": "2\n",
        "block/vdb/size": "2048\n", // no serial: no link, as udev gives none
        "block/nvme0n1/device/model": "Samsung SSD 980 PRO 1TB                 \n",
        "block/nvme0n1/device/serial": "  S5GXNX0R123456 \n",
        "block/nvme0n1/wwid": "eui.002538b111b0d8c2\n",
        "block/nvme0n1/nvme0n1p1/partition": "1\n",
        "block/sda/device/wwid": "naa.5000c500a1b2c3d4\n",
        "block/sdb/device/wwid": "t10.ATA     QEMU HARDDISK                           QM00001\n",
        "block/loop0/size": "0\n",
      });
      await lay(dev, {
        "vda": "",
        "vda1": "",
        "vda2": "",
        "vdb": "",
        "nvme0n1": "",
        "nvme0n1p1": "",
        "sda": "",
        "sdb": "",
      });
      await Deno.mkdir(`${dev}/disk/by-id`, { recursive: true });
      await Deno.symlink("../../vdz", `${dev}/disk/by-id/virtio-gone`);
      await run(dev, sys);
      const got = await links(dev);
      assert.deepEqual(got, {
        "virtio-bcd-disk-1": "../../vda",
        "virtio-bcd-disk-1-part1": "../../vda1",
        "virtio-bcd-disk-1-part2": "../../vda2",
        "nvme-Samsung_SSD_980_PRO_1TB_S5GXNX0R123456": "../../nvme0n1",
        "nvme-Samsung_SSD_980_PRO_1TB_S5GXNX0R123456-part1": "../../nvme0n1p1",
        "nvme-eui.002538b111b0d8c2": "../../nvme0n1",
        "nvme-eui.002538b111b0d8c2-part1": "../../nvme0n1p1",
        "wwn-0x5000c500a1b2c3d4": "../../sda",
        "scsi-t10.ATA_QEMU_HARDDISK_QM00001": "../../sdb",
      });
      for (const name of Object.keys(got)) assert.ok(isDiskId(name), `${name} is a by-id name bcd accepts`);

      // A partition table rewritten (deploy.image): vda2 goes, and the next pass drops its link.
      await Deno.remove(`${sys}/block/vda/vda2`, { recursive: true });
      await Deno.remove(`${dev}/vda2`);
      await run(dev, sys);
      assert.ok(!("virtio-bcd-disk-1-part2" in await links(dev)));
      assert.equal((await links(dev))["virtio-bcd-disk-1-part1"], "../../vda1");
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});
