import assert from "node:assert/strict";
import { type ChRecord, ChRecordRefused, readRecord, RECORD_FILE, sysfsDevice, writeRecord } from "./vm_record.ts";
import { CH_FIRMWARE, VMM_UID_BASE } from "./unit.ts";

async function withDir(f: (dir: string, paths: { instanceDir: string; volumesDir: string }) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "bcd-ch-rec-" });
  const instanceDir = `${dir}/cloud-hypervisor/instances/vm-1`;
  await Deno.mkdir(instanceDir, { recursive: true });
  try {
    await f(dir, { instanceDir, volumesDir: `${dir}/volumes` });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function record(inst: string, vols: string): ChRecord {
  return {
    v: 1,
    id: "vm-1",
    allocationId: "alloc-1",
    uid: VMM_UID_BASE,
    vcpus: 2,
    memoryBytes: 1024 * 1024 * 1024,
    image: { sha256: "a".repeat(64), format: "qcow2" },
    restoredFrom: null,
    nics: [{ mac: "52:54:00:00:00:01", bridge: "br0" }],
    gpus: [{ uuid: "GPU-1", pciBusId: "00000000:3B:00.0" }],
    placement: null,
    volumes: [{ id: "data", serial: "vol-data", readonly: false }],
    config: {
      payload: { firmware: CH_FIRMWARE },
      cpus: { boot_vcpus: 2, max_vcpus: 2 },
      memory: { size: 1024 * 1024 * 1024 },
      disks: [
        { path: `${inst}/disk.qcow2`, image_type: "Qcow2", backing_files: true },
        { path: `${inst}/seed.iso`, image_type: "Raw", readonly: true },
        { path: `${vols}/data.raw`, image_type: "Raw", serial: "vol-data" },
      ],
      serial: { mode: "Socket", socket: `${inst}/serial.sock` },
      console: { mode: "Off" },
      rng: { src: "/dev/urandom" },
      devices: [{ path: "/sys/bus/pci/devices/0000:3b:00.0/" }],
    },
  };
}

Deno.test("vm.json round-trips through writeRecord and readRecord; no file is no record", async () => {
  await withDir(async (_dir, paths) => {
    assert.equal(await readRecord("vm-1", paths), undefined, "a directory without vm.json is not bcd's");
    const r = record(paths.instanceDir, paths.volumesDir);
    await writeRecord(r, paths);
    assert.deepEqual(await readRecord("vm-1", paths), r);
    assert.equal((await Deno.stat(`${paths.instanceDir}/${RECORD_FILE}`)).mode! & 0o777, 0o600);
    assert.equal(sysfsDevice("00000000:3B:00.0"), "/sys/bus/pci/devices/0000:3b:00.0/");
  });
});

Deno.test("readRecord() refuses a vm.json that names files outside the instance directory, or is not what bcd writes", async (t) => {
  await withDir(async (dir, paths) => {
    const inst = paths.instanceDir;
    const base = record(inst, paths.volumesDir);
    const cases: Array<[string, (r: ChRecord) => unknown, RegExp]> = [
      ["a disk elsewhere (the host's disk)", (r) => _disks(r, "/dev/sda"), /disks\[0\]\.path "\/dev\/sda" is outside/],
      ["a disk in another instance's directory", (r) => _disks(r, `${inst}/../vm-2/disk.qcow2`), /is outside/],
      ["a volume the record does not attach", (r) => _disks(r, `${paths.volumesDir}/other.raw`), /is outside/],
      [
        "another firmware or a kernel",
        (r) => ({ ...r, config: { ...r.config, payload: { kernel: "/boot/vmlinuz" } } }),
        /payload/,
      ],
      [
        "a serial socket elsewhere",
        (r) => ({ ...r, config: { ...r.config, serial: { mode: "Socket", socket: "/run/x.sock" } } }),
        /serial/,
      ],
      [
        "a console writing a file",
        (r) => ({ ...r, config: { ...r.config, console: { mode: "File", file: "/etc/x" } } }),
        /console/,
      ],
      ["an rng reading another file", (r) => ({ ...r, config: { ...r.config, rng: { src: "/etc/shadow" } } }), /rng/],
      [
        "a PCI device that is not the record's GPU",
        (r) => ({ ...r, config: { ...r.config, devices: [{ path: "/sys/bus/pci/devices/0000:00:1f.2/" }] } }),
        /devices\[0\]/,
      ],
      [
        "a virtio-fs share",
        (r) => ({ ...r, config: { ...r.config, fs: [{ socket: "/run/fs.sock", tag: "x" }] } }),
        /config\.fs/,
      ],
      ["a pmem file", (r) => ({ ...r, config: { ...r.config, pmem: [{ file: "/etc/passwd" }] } }), /config\.pmem/],
      [
        "memory zones backed by a file",
        (r) => ({ ...r, config: { ...r.config, memory: { size: 1, zones: [{ id: "z", size: 1, file: "/x" }] } } }),
        /memory\.zones/,
      ],
      ["backing files on the seed", (r) => _disk1(r, { backing_files: true }), /backing_files/],
      ["an unknown record key", (r) => ({ ...r, extra: 1 }), /key "extra"/],
      ["a uid outside the VMM range", (r) => ({ ...r, uid: 0 }), /uid 0 is outside/],
      ["an iso image", (r) => ({ ...r, image: { sha256: "a".repeat(64), format: "iso" } }), /not an iso/],
      ["another instance's id", (r) => ({ ...r, id: "vm-2" }), /id "vm-2" names another instance/],
    ];
    for (const [what, change, msg] of cases) {
      await t.step(what, async () => {
        await Deno.writeTextFile(`${inst}/${RECORD_FILE}`, JSON.stringify(change(base)));
        await assert.rejects(
          readRecord("vm-1", paths),
          (e) => e instanceof ChRecordRefused && e.reason === "invalid-record" && msg.test(e.message),
        );
        await assert.rejects(writeRecord(change(base) as ChRecord, paths), ChRecordRefused);
      });
    }
    await t.step("a symlinked vm.json is refused without being followed", async () => {
      await Deno.writeTextFile(`${dir}/elsewhere.json`, JSON.stringify(base));
      await Deno.remove(`${inst}/${RECORD_FILE}`);
      await Deno.symlink(`${dir}/elsewhere.json`, `${inst}/${RECORD_FILE}`);
      await assert.rejects(readRecord("vm-1", paths), /is not a regular file/);
    });
    await t.step("a vm.json past 256 KiB is refused before it is parsed", async () => {
      await Deno.remove(`${inst}/${RECORD_FILE}`);
      await Deno.writeTextFile(`${inst}/${RECORD_FILE}`, " ".repeat(300 * 1024));
      await assert.rejects(readRecord("vm-1", paths), /at most 262144/);
    });
  });
});

function _disks(r: ChRecord, path: string): ChRecord {
  return { ...r, config: { ...r.config, disks: [{ path, image_type: "Raw" }] } };
}
function _disk1(r: ChRecord, extra: Record<string, unknown>): ChRecord {
  const d = [...(r.config.disks ?? [])];
  d[1] = { ...d[1], ...extra };
  return { ...r, config: { ...r.config, disks: d } };
}
