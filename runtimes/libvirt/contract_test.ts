/**
 * The contracts of `runtimes/libvirt`, each run against the in-memory fake `virsh` and against the real `virsh` on a
 * libvirtd this file starts (domains of type `qemu`, TCG): the `Virsh` port, then the `libvirt-kvm` `InstanceRuntime`
 * over the root-side `LibvirtHost` (real qcow2 images made by qemu-img, served over loopback https). Without root,
 * libvirtd, QEMU, qemu-img or openssl the real run is skipped with the reason printed.
 */
import { answerRebindAsGuest } from "../../core/rebind/rebind_testing.ts";
import assert from "node:assert/strict";
import { RuntimeRefused } from "../../core/converge/instances/runtime.ts";
import type { DomainRecord, LaunchSpec } from "../../core/converge/instances/runtime.ts";
import { ensureLibvirtd } from "../../fixtures/libvirt/libvirtd.ts";
import { type ImageServer, makeQcow2, sha256Hex, startImageServer } from "../../fixtures/libvirt/image_server.ts";
import { FakeVirsh } from "./fake_virsh.ts";
import { startTestHelper } from "../helper/helper_testing.ts";
import { parseQcow2Header, readQcow2Prefix } from "../../core/images/qcow2_header.ts";
import { HelperLibvirtHost } from "./helper_port.ts";
import { LibvirtHost } from "./libvirt_host.ts";
import { LibvirtRuntime } from "./libvirt_runtime.ts";
import { SnapshotStore } from "./snapshot_store.ts";
import { LibvirtSnapshots } from "./snapshots.ts";
import { HttpsUploader } from "../host/https_put.ts";
import { instanceSnapshotHandler } from "../../core/commands/kind_handlers/instance_snapshot.ts";
import type { HandlerContext } from "../../core/commands/handlers.ts";
import { packPayload, unpackResult } from "../../proto/mod.ts";
import { CommandVirsh, parseVirshList, type Virsh, VirshError, type VirshErrorCode } from "./virsh.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";
import { FileVolumeStore } from "../volumes/file_store.ts";
import { REBIND_DISK } from "../../core/converge/instances/domain_plan.ts";
import { instanceRuntimeContract } from "../instance_runtime_contract_testing.ts";
import { skipStep } from "../../fixtures/skip_step.ts";

type Backend = { readonly virsh: Virsh; readonly real: boolean; readonly viaHelper?: boolean } | {
  readonly skip: string;
};

let realStop: (() => Promise<void>) | undefined;
let real: Promise<Backend> | undefined;
function realBackend(): Promise<Backend> {
  return real ??= (async () => {
    const d = await ensureLibvirtd();
    if ("skip" in d) return d;
    realStop = d.stop;
    return { virsh: new CommandVirsh({ uri: d.uri }), real: true };
  })();
}

const BACKENDS: ReadonlyArray<[string, () => Promise<Backend>]> = [
  ["fake", () => Promise.resolve({ virsh: new FakeVirsh(), real: false })],
  [
    "fake, through the root helper's libvirt.* ops",
    () => Promise.resolve({ virsh: new FakeVirsh(), real: false, viaHelper: true }),
  ],
  ["real libvirtd, type qemu", realBackend],
];

const uuids = new Map<string, string>();
function tinyDomain(name: string, balloon = "none"): string {
  const uuid = uuids.get(name) ?? crypto.randomUUID();
  uuids.set(name, uuid);
  return `<domain type='qemu'><name>${name}</name><uuid>${uuid}</uuid><memory unit='MiB'>32</memory><vcpu>1</vcpu>` +
    `<os><type arch='x86_64'>hvm</type></os><devices><memballoon model='${balloon}'/></devices></domain>`;
}

async function rejectsWith(p: Promise<unknown>, code: VirshErrorCode): Promise<void> {
  await assert.rejects(p, (e) => e instanceof VirshError && e.code === code);
}

async function stateOf(v: Virsh, name: string) {
  return (await v.list()).find((d) => d.name === name)?.state;
}

async function cleanup(v: Virsh, name: string): Promise<void> {
  const s = await stateOf(v, name);
  if (s === "running" || s === "paused") await v.destroy(name);
  if (await stateOf(v, name) !== undefined) await v.undefine(name);
}

for (const [label, make] of BACKENDS) {
  if (!label.includes("helper")) virshContract(label, make);
  runtimeContract(label, make);
  hostContract(label, make);
  snapshotContract(label, make);
}

function virshContract(label: string, make: () => Promise<Backend>): void {
  Deno.test(`Virsh contract (${label}): define, start, suspend, resume, destroy and undefine move a domain through its states`, async (t) => {
    const b = await make();
    if ("skip" in b) return void await skipStep(t, b.skip);
    const v = b.virsh;
    const name = `bcd-ct-${crypto.randomUUID().slice(0, 8)}`;
    try {
      assert.equal(await v.define(tinyDomain(name)), name);
      assert.equal(await stateOf(v, name), "stopped");
      assert.match(await v.dumpxml(name), new RegExp(`<name>${name}</name>`));
      await t.step("a second define of the same name and uuid redefines it; another uuid is invalid", async () => {
        assert.equal(await v.define(tinyDomain(name)), name);
        assert.equal((await v.list()).filter((d) => d.name === name).length, 1);
        await rejectsWith(v.define(tinyDomain(name).replace(uuids.get(name)!, crypto.randomUUID())), "invalid");
      });
      await t.step("start runs it; a second start is invalid", async () => {
        await v.start(name, false);
        assert.equal(await stateOf(v, name), "running");
        await rejectsWith(v.start(name, false), "invalid");
      });
      await t.step("suspend pauses, resume runs again", async () => {
        await v.suspend(name);
        assert.equal(await stateOf(v, name), "paused");
        await v.resume(name);
        assert.equal(await stateOf(v, name), "running");
      });
      await t.step("destroy stops it; destroying or growing a stopped domain is invalid", async () => {
        await v.destroy(name);
        assert.equal(await stateOf(v, name), "stopped");
        await rejectsWith(v.destroy(name), "invalid");
        await rejectsWith(v.blockresize(name, "vda", 1 << 30), "invalid");
      });
      await t.step("start --paused leaves it paused", async () => {
        await v.start(name, true);
        assert.equal(await stateOf(v, name), "paused");
        await v.destroy(name);
      });
      await t.step("undefine removes a stopped domain", async () => {
        await v.undefine(name);
        assert.equal(await stateOf(v, name), undefined);
      });
    } finally {
      await cleanup(v, name);
    }
  });

  Deno.test(`Virsh contract (${label}): save writes the memory state and shuts the domain off; restore runs it again only under its own name and UUID`, async (t) => {
    const b = await make();
    if ("skip" in b) return void await skipStep(t, b.skip);
    const v = b.virsh;
    const name = `bcd-ct-save-${crypto.randomUUID().slice(0, 8)}`;
    const dir = await Deno.makeTempDir({ prefix: "bcd-virsh-save-" });
    const file = `${dir}/memory.save`;
    try {
      await v.define(tinyDomain(name, "virtio"));
      await v.start(name, true);
      await t.step("a stopped domain cannot be saved", async () => {
        const other = `bcd-ct-save-${crypto.randomUUID().slice(0, 8)}`;
        await v.define(tinyDomain(other));
        try {
          await rejectsWith(v.save(other, `${dir}/other.save`), "invalid");
        } finally {
          await cleanup(v, other);
        }
      });
      await t.step("save leaves a save image with the domain's name in its header, the domain shut off", async () => {
        await v.save(name, file);
        assert.equal(await stateOf(v, name), "stopped");
        const head = await Deno.readFile(file);
        assert.equal(new TextDecoder().decode(head.subarray(0, 16)), "LibvirtQemudSave");
        assert.match(new TextDecoder().decode(head.subarray(92, 4096)), new RegExp(`<name>${name}</name>`));
      });
      await t.step("a restore with another UUID is invalid and leaves the domain off", async () => {
        const alien = tinyDomain(name, "virtio").replace(uuids.get(name)!, crypto.randomUUID());
        await rejectsWith(v.restore(file, alien, true), "invalid");
        assert.equal(await stateOf(v, name), "stopped");
      });
      await t.step("a restore with the domain's own XML runs it paused", async () => {
        await v.restore(file, tinyDomain(name, "virtio"), true);
        assert.equal(await stateOf(v, name), "paused");
      });
      await t.step("setmem --live sets the balloon within the memory; above it is invalid", async () => {
        await v.setmem(name, 16 * 1024);
        await rejectsWith(v.setmem(name, 64 * 1024), "invalid");
        const st = await v.balloon(name);
        assert.equal(st.maximumKiB, 32 * 1024);
        assert.ok(st.currentKiB !== undefined);
      });
      await t.step("setmem on a domain without a balloon is invalid", async () => {
        const other = `bcd-ct-save-${crypto.randomUUID().slice(0, 8)}`;
        await v.define(tinyDomain(other));
        try {
          await v.start(other, true);
          await rejectsWith(v.setmem(other, 16 * 1024), "invalid");
        } finally {
          await cleanup(v, other);
        }
      });
    } finally {
      await cleanup(v, name);
      await Deno.remove(dir, { recursive: true });
    }
  });

  Deno.test(`Virsh contract (${label}): the change marker moves with every define, start, pause, resume, destroy and undefine`, async (t) => {
    const b = await make();
    if ("skip" in b) return void await skipStep(t, b.skip);
    // The real marker is trusted only once libvirt's last change has settled; this run's clock is a minute ahead.
    const v = b.real ? new CommandVirsh({ uri: "qemu:///system", clock: new FakeClock(Date.now() + 60_000) }) : b.virsh;
    const name = `bcd-mk-${crypto.randomUUID().slice(0, 8)}`;
    try {
      let last = await v.changeMarker();
      assert.notEqual(last, undefined, "a marker exists");
      // Other suites share the real libvirtd and may change it at any moment; only the fake is known to stand still.
      if (!b.real) assert.equal(await v.changeMarker(), last, "it stands while nothing changes");
      const steps: Array<[string, () => Promise<unknown>]> = [
        ["define", () => v.define(tinyDomain(name))],
        ["start --paused", () => v.start(name, true)],
        ["resume", () => v.resume(name)],
        ["suspend", () => v.suspend(name)],
        ["destroy", () => v.destroy(name)],
        ["undefine", () => v.undefine(name)],
      ];
      for (const [what, f] of steps) {
        await f();
        const now = await v.changeMarker();
        assert.notEqual(now, last, `${what} moves the marker`);
        last = now;
      }
    } finally {
      await cleanup(v, name);
    }
  });

  Deno.test(`Virsh contract (${label}): an unknown domain is no-domain and a broken definition invalid`, async (t) => {
    const b = await make();
    if ("skip" in b) return void await skipStep(t, b.skip);
    const v = b.virsh;
    const ghost = `bcd-ct-none-${crypto.randomUUID().slice(0, 8)}`;
    await rejectsWith(v.start(ghost, false), "no-domain");
    await rejectsWith(v.dumpxml(ghost), "no-domain");
    await rejectsWith(v.undefine(ghost), "no-domain");
    await rejectsWith(v.define("<domain type='qemu'><name>x</name>"), "invalid");
  });
}

function runtimeContract(label: string, make: () => Promise<Backend>): void {
  instanceRuntimeContract("libvirt-kvm", label, async () => {
    const b = await make();
    if ("skip" in b) return b;
    const env = await setup(b.virsh, { viaHelper: b.viaHelper });
    if ("skip" in env) return env;
    const foreign = new Map<string, string | undefined>();
    return {
      rt: env.rt,
      srv: env.srv,
      dir: env.dir,
      imagesDir: `${env.dir}/data/libvirt/images`,
      plantForeign: async (name) => {
        await b.virsh.define(tinyDomain(name));
        await b.virsh.start(name, true);
        foreign.set(name, await stateOf(b.virsh, name));
      },
      foreignUntouched: async (name) => (await stateOf(b.virsh, name)) === "paused" && foreign.get(name) === "paused",
      balloon: b.real
        ? { noGuestDriver: "the real libvirtd's test guest runs no OS, so no balloon driver follows a target" }
        : { setGuestUse: (id, bytes) => Promise.resolve((b.virsh as FakeVirsh).setGuestUse(id, bytes / 1024)) },
      runningDiskSize: async (id) => {
        if (!b.real) return (b.virsh as FakeVirsh).sizeOf(id, "vda") ?? -1;
        return Number(parseQcow2Header(await readQcow2Prefix(`${env.rt.instanceDir(id)}/disk.qcow2`)).virtualSize);
      },
      volumes: {
        dir: `${env.dir}/data/volumes`,
        ...(b.real ? { noUnplugAck: "the real libvirtd's test guest runs no OS to acknowledge it" } : {}),
        attached: async (id) => {
          const xml = await b.virsh.dumpxml(id);
          const out = [];
          for (const [dev, path] of await b.virsh.liveDisks(id)) {
            if (!path.startsWith(`${env.dir}/data/volumes/`)) continue;
            const disk = xml.split("</disk>").find((d) => d.includes(`file='${path}'`)) ?? "";
            let resizedTo: number | undefined;
            if (b.real) {
              const o = await new Deno.Command("virsh", { args: ["-c", "qemu:///system", "domblkinfo", id, dev] })
                .output();
              resizedTo = Number(/Capacity:\s+(\d+)/.exec(new TextDecoder().decode(o.stdout))?.[1]);
            } else resizedTo = (b.virsh as FakeVirsh).sizeOf(id, dev);
            out.push({
              path,
              serial: /<serial>([^<]*)<\/serial>/.exec(disk)?.[1] ?? "",
              readOnly: /<readonly\/>/.test(disk),
              ...(resizedTo !== undefined ? { resizedTo } : {}),
            });
          }
          return out;
        },
      },
      rebind: {
        ...(b.real ? { noUnplugAck: "the real libvirtd's test guest runs no OS to acknowledge it" } : {}),
        // The guest: watches the domain's live disks for vdz and answers on its file as the guest half does.
        answerNext: (id) => {
          const found = (async () => {
            for (let i = 0; i < 400; i++) {
              const path = (await b.virsh.liveDisks(id)).get("vdz");
              if (path !== undefined) {
                answerRebindAsGuest(path);
                return { target: "vdz", path };
              }
              await new Promise((r) => setTimeout(r, 25));
            }
            return undefined;
          })();
          return { seen: () => found };
        },
        attached: async (id) => (await b.virsh.liveDisks(id)).has("vdz"),
      },
      cleanup: (id) => cleanup(b.virsh, id),
      close: env.close,
    };
  });

  Deno.test(`InstanceRuntime contract, libvirt-kvm (${label}): two nodes sharing one libvirtd never list, touch or delete each other's domains`, async (t) => {
    const b = await make();
    if ("skip" in b) return void await skipStep(t, b.skip);
    const a = await setup(b.virsh, { viaHelper: b.viaHelper, owner: "node-a" });
    if ("skip" in a) return void await skipStep(t, a.skip);
    const other = await setup(b.virsh, { viaHelper: b.viaHelper, owner: "node-b" });
    if ("skip" in other) {
      await a.close();
      return void await skipStep(t, other.skip);
    }
    const id = `bcd-own-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const base = await makeQcow2(a.dir, "base.qcow2", "16M");
      a.srv.put(`/${id}.qcow2`, base);
      await a.rt.define(
        record(id, launch({ url: `${a.srv.origin}/${id}.qcow2`, sha256: await sha256Hex(base), format: "qcow2" })),
      );
      await a.rt.start(id, true);
      assert.equal((await a.rt.list()).find((x) => x.id === id)?.record?.id, id, "node-a manages its domain");
      const seen = (await other.rt.list()).find((x) => x.id === id);
      assert.equal(seen?.state, "paused", "node-b lists it");
      assert.equal(seen?.record, undefined, "as unmanaged");
      for (const f of [() => other.rt.stop(id), () => other.rt.delete(id), () => other.rt.resume(id)]) {
        await assert.rejects(f(), (e) => e instanceof RuntimeRefused && e.reason === "unmanaged-domain");
      }
      await assert.rejects(other.rt.define(record(id, launch(null))), (e) => e instanceof RuntimeRefused);
      assert.equal(await stateOf(b.virsh, id), "paused", "node-a's domain is untouched");
      await a.rt.delete(id);
      assert.equal(await stateOf(b.virsh, id), undefined);
    } finally {
      await cleanup(b.virsh, id);
      await other.close();
      await a.close();
    }
  });

  Deno.test(`InstanceRuntime contract, libvirt-kvm (${label}): a NIC on a bridge outside [helper] instance_bridges is refused, and every NIC without the key`, async (t) => {
    const b = await make();
    if ("skip" in b) return void await skipStep(t, b.skip);
    for (const [bridges, what] of [[["br-inst"], "listed"], [[], "missing"]] as const) {
      await t.step(`instance_bridges ${what}`, async () => {
        const env = await setup(b.virsh, { viaHelper: b.viaHelper, bridges });
        if ("skip" in env) return void await skipStep(t, env.skip);
        const id = `bcd-nic-${crypto.randomUUID().slice(0, 8)}`;
        try {
          const base = await makeQcow2(env.dir, "base.qcow2", "16M");
          env.srv.put(`/${id}.qcow2`, base);
          const img = { url: `${env.srv.origin}/${id}.qcow2`, sha256: await sha256Hex(base), format: "qcow2" as const };
          const nics = [{ mac: "52:54:00:12:34:56", bridge: "br-inst" }, {
            mac: "52:54:00:12:34:57",
            bridge: "br-other",
          }];
          await assert.rejects(
            env.rt.define(record(id, { ...launch(img), nics })),
            (e) =>
              e instanceof RuntimeRefused && e.reason === "bridge-not-allowed" &&
              e.message.includes(bridges.length ? `nics[1] is on bridge "br-other"` : "instance_bridges is not set"),
          );
          assert.equal(await stateOf(b.virsh, id), undefined, "no domain was defined");
          if (bridges.length) {
            await env.rt.define(record(id, { ...launch(img), nics: nics.slice(0, 1) }));
            assert.equal(await stateOf(b.virsh, id), "stopped", "a NIC on a listed bridge is defined");
          }
        } finally {
          await cleanup(b.virsh, id);
          await env.close();
        }
      });
    }
  });

  Deno.test(`InstanceRuntime contract, libvirt-kvm (${label}): volumes are raw virtio disks by serial, hot-plugged live, grown live, and closed again once detached`, async (t) => {
    const b = await make();
    if ("skip" in b) return void await skipStep(t, b.skip);
    const env = await setup(b.virsh, { viaHelper: b.viaHelper });
    if ("skip" in env) return void await skipStep(t, env.skip);
    const { rt, srv, dir, host } = env;
    const id = `bcd-vol-${crypto.randomUUID().slice(0, 8)}`;
    const M = 1024 * 1024;
    const volumes = new FileVolumeStore({ dir: `${dir}/data/volumes` });
    const mode = async (v: string) => (await Deno.stat(volumes.rawPath(v))).mode! & 0o777;
    const planned = async () => (await host.list()).find((d) => d.name === id)?.plan?.volumes ?? [];
    try {
      await volumes.create("v-a", "disk-a", 8 * M);
      await volumes.create("v-b", "disk-b", 8 * M);
      await volumes.create("v-c", "disk-c", 8 * M);
      const base = await makeQcow2(dir, "base.qcow2", "16M");
      srv.put(`/${id}.qcow2`, base);
      const img = { url: `${srv.origin}/${id}.qcow2`, sha256: await sha256Hex(base), format: "qcow2" as const };
      await t.step("a define attaches the record's volumes in order from vdb, with their serials", async () => {
        await rt.define({
          ...record(id, launch(img)),
          volumes: [{ volumeId: "v-a", serial: "disk-a", readOnly: false }, {
            volumeId: "v-b",
            serial: "disk-b",
            readOnly: true,
          }],
        });
        assert.deepEqual(await planned(), [
          { id: "v-a", serial: "disk-a", readOnly: false, dev: "vdb" },
          { id: "v-b", serial: "disk-b", readOnly: true, dev: "vdc" },
        ]);
        const xml = await b.virsh.dumpxml(id);
        assert.match(xml, new RegExp(`<source file='${dir}/data/volumes/v-a.raw'/>`));
        const diskB = /<disk[^>]*>(?:(?!<\/disk>)[\s\S])*v-b\.raw[\s\S]*?<\/disk>/.exec(xml)?.[0] ?? "";
        assert.match(diskB, /<serial>disk-b<\/serial>/);
        assert.match(diskB, /<readonly\/>/);
        assert.deepEqual((await rt.list()).find((d) => d.id === id)?.record?.volumes?.map((v) => v.volumeId), [
          "v-a",
          "v-b",
        ]);
      });
      await t.step(
        "a running domain's unplug waits for the guest: detach-pending keeps the volume in the plan",
        async () => {
          await rt.start(id, true);
          for (const v of ["v-a", "v-b", "v-c"]) await Deno.chmod(volumes.rawPath(v), 0o660);
          // A paused guest cannot acknowledge an unplug (libvirt and the fake alike): retried next pass, not a failure.
          await assert.rejects(
            rt.setVolumes(id, [{ volumeId: "v-a", serial: "disk-a", readOnly: false }]),
            (e) => !(e instanceof RuntimeRefused) && /has not released vdc \(volume v-b\) yet/.test(String(e)),
          );
          assert.deepEqual((await planned()).map((v) => v.id), ["v-a", "v-b"]);
          assert.equal(await mode("v-b"), 0o660, "a volume the guest still holds is not closed");
        },
      );
      await t.step("a volume is hot-plugged at the first device free in the plan and in the guest", async () => {
        const o = await host.attachDisk(id, { volume: { id: "v-c", serial: "disk-c", readOnly: false } });
        assert.deepEqual(o, {});
        assert.deepEqual((await planned()).map((v) => [v.id, v.dev]), [["v-a", "vdb"], ["v-b", "vdc"], ["v-c", "vdd"]]);
        assert.equal((await b.virsh.liveDisks(id)).get("vdd"), `${dir}/data/volumes/v-c.raw`);
        assert.match(await b.virsh.dumpxml(id), /v-c\.raw/, "and written into the definition");
        assert.deepEqual(await host.attachDisk(id, { volume: { id: "v-c", serial: "disk-c", readOnly: false } }), {});
        assert.equal((await planned()).length, 3, "attaching an attached volume is nothing to do");
      });
      await t.step("a grown volume is resized live under the guest", async () => {
        await volumes.grow("v-c", 16 * M);
        await rt.growVolume(id, "v-c", 16 * M);
        if (b.real) {
          const out = await new Deno.Command("virsh", { args: ["-c", "qemu:///system", "domblkinfo", id, "vdd"] })
            .output();
          assert.match(new TextDecoder().decode(out.stdout), new RegExp(`Capacity:\\s+${16 * M}\\b`));
        } else assert.equal((b.virsh as FakeVirsh).sizeOf(id, "vdd"), 16 * M);
        assert.equal((await host.blockresize(id, 16 * M, "v-none")).refused?.reason, "no-volume");
      });
      await t.step("a volume whose file is missing or a link is refused bad-volume; nothing is plugged", async () => {
        await Deno.symlink("/etc/hostname", `${dir}/data/volumes/v-l.raw`);
        const o = await host.attachDisk(id, { volume: { id: "v-l", serial: "l", readOnly: true } });
        assert.equal(o.refused?.reason, "bad-volume");
        const o2 = await host.attachDisk(id, { volume: { id: "v-none", serial: "n", readOnly: true } });
        assert.equal(o2.refused?.reason, "bad-volume");
        assert.deepEqual((await planned()).map((v) => v.id), ["v-a", "v-b", "v-c"]);
      });
      await t.step("the identity rebind disk is hot-added as vdz (1 MiB only), live only", async () => {
        const file = `${rt.instanceDir(id)}/${REBIND_DISK.file}`;
        await Deno.writeFile(file, new Uint8Array(12));
        assert.equal((await host.attachDisk(id, { rebind: true })).refused?.reason, "bad-disk", "not 1 MiB");
        await Deno.truncate(file, REBIND_DISK.bytes);
        assert.deepEqual(await host.attachDisk(id, { rebind: true }), {});
        assert.equal((await b.virsh.liveDisks(id)).get("vdz"), file);
        assert.doesNotMatch(await b.virsh.dumpxml(id), /rebind\.raw/, "never in the definition");
        assert.equal((await host.detachDisk(id, { rebind: true })).refused?.reason, "detach-pending");
      });
      await t.step(
        "a stop closes every volume again (0600, the store's owner); a stopped domain is redefined",
        async () => {
          await rt.stop(id);
          await rt.list();
          const owner = (await Deno.stat(`${dir}/data/volumes`)).uid;
          for (const v of ["v-a", "v-b", "v-c"]) {
            assert.equal(await mode(v), 0o600, v);
            assert.equal((await Deno.stat(volumes.rawPath(v))).uid, owner, v);
          }
          assert.equal((await b.virsh.liveDisks(id)).has("vdz"), false);
          await rt.setVolumes(id, [{ volumeId: "v-b", serial: "disk-b", readOnly: true }]);
          assert.deepEqual(await planned(), [{ id: "v-b", serial: "disk-b", readOnly: true, dev: "vdb" }]);
        },
      );
    } finally {
      await cleanup(b.virsh, id);
      await env.close();
    }
  });
}

function snapshotContract(label: string, make: () => Promise<Backend>): void {
  Deno.test(`Snapshot contract, libvirt-kvm (${label}): a disk-only and a memory snapshot are staged, hashed and uploaded while the instance runs on, and restore_from of each defines a new instance that starts`, async (t) => {
    const b = await make();
    if ("skip" in b) return void await skipStep(t, b.skip);
    const env = await setup(b.virsh, { viaHelper: b.viaHelper });
    if ("skip" in env) return void await skipStep(t, env.skip);
    const { rt, srv, dir, host, store } = env;
    const src = `bcd-sn-${crypto.randomUUID().slice(0, 8)}`;
    const ids = [src];
    try {
      const base = await makeQcow2(dir, `${src}.qcow2`, "64M");
      const sha = await sha256Hex(base);
      srv.put(`/${src}.qcow2`, base);
      await rt.define(record(src, launch({ url: `${srv.origin}/${src}.qcow2`, sha256: sha, format: "qcow2" })));
      await rt.start(src, false);
      const snaps = new LibvirtSnapshots({
        runtime: rt,
        host,
        dataDir: `${dir}/data`,
        cpuModel: () => Promise.resolve(CPU),
      });
      const uploader = new HttpsUploader({ caCerts: [await srv.caPem()] });
      const handler = instanceSnapshotHandler({ snapshotter: () => snaps, uploader });
      const taken: Record<string, { sha256: string; size: number }> = {};
      for (const memory of [false, true]) {
        const kind = memory ? "memory" : "disk";
        await t.step(
          `a ${kind} snapshot uploads a tar whose SHA-256 the result names; the instance runs on`,
          async () => {
            const r = await runSnapshot(handler, src, memory, `${srv.origin}/up/${kind}.tar`);
            const up = srv.uploaded(`/up/${kind}.tar`)!;
            assert.ok(up, "the upload arrived");
            assert.equal(r.sha256, await sha256Hex(up));
            assert.equal(r.size_bytes, up.length);
            assert.equal(r.runtime, "libvirt-kvm");
            assert.equal(r.include_memory, memory);
            assert.equal(r.cpu_model, memory ? CPU : "");
            assert.equal(await state(rt, src), "running");
            const names = await tarNames(dir, up);
            assert.deepEqual(names, ["meta.json", "disk.qcow2", "seed.iso", ...(memory ? ["memory.save"] : [])]);
            const left = [...Deno.readDirSync(`${dir}/data/snapshots`)].map((e) => e.name);
            assert.deepEqual(left, [], "the stage is gone");
            await assert.rejects(Deno.stat(`${rt.instanceDir(src)}/memory.save`), Deno.errors.NotFound);
            taken[kind] = { sha256: r.sha256, size: Number(r.size_bytes) };
          },
        );
      }
      for (const memory of [false, true]) {
        const kind = memory ? "memory" : "disk";
        await t.step(
          `restore_from the ${kind} snapshot downloads it in the background, defines a flat disk and starts`,
          async () => {
            const id = `bcd-rs-${crypto.randomUUID().slice(0, 8)}`;
            ids.push(id);
            const ref = {
              url: `${srv.origin}/up/${kind}.tar`,
              sha256: taken[kind]!.sha256,
              runtime: "libvirt-kvm",
              includeMemory: memory,
              cpuModel: memory ? CPU : "",
              sizeBytes: taken[kind]!.size,
            };
            assert.equal(store.poll(ref).state, "downloading");
            await store.settled(ref.sha256);
            assert.equal(store.poll(ref).state, "ready");
            await rt.define(record(id, { ...launch(null), restoreFrom: ref }));
            const d = (await rt.list()).find((x) => x.id === id);
            assert.equal(d?.state, "stopped");
            assert.equal(d?.record?.imageSha256, "");
            await rt.start(id, false);
            assert.equal(await state(rt, id), "running");
            await assert.rejects(Deno.stat(`${rt.instanceDir(id)}/memory.save`), Deno.errors.NotFound);
            if (!b.real && b.virsh instanceof FakeVirsh) {
              assert.equal(b.virsh.calls.filter((c) => c.startsWith(`restore ${id}`)).length, memory ? 1 : 0);
            }
          },
        );
      }
      await t.step(
        "a memory snapshot from another CPU model fails the new instance and leaves no directory",
        async () => {
          const id = `bcd-rs-${crypto.randomUUID().slice(0, 8)}`;
          const other = new LibvirtRuntime({
            host,
            dataDir: `${dir}/data`,
            snapshots: store,
            cpuModel: () => Promise.resolve("another CPU"),
          });
          const ref = {
            url: `${srv.origin}/up/memory.tar`,
            sha256: taken.memory!.sha256,
            runtime: "libvirt-kvm",
            includeMemory: true,
            cpuModel: CPU,
            sizeBytes: 0,
          };
          await assert.rejects(
            other.define(record(id, { ...launch(null), restoreFrom: ref })),
            (e) => e instanceof RuntimeRefused && e.reason === "snapshot-cpu-model",
          );
          await assert.rejects(Deno.stat(other.instanceDir(id)), Deno.errors.NotFound);
          assert.equal(await stateOf(b.virsh, id), undefined);
        },
      );
      await t.step("prune deletes the downloads no spec restores from", async () => {
        assert.deepEqual(await store.prune(new Set([taken.memory!.sha256])), [taken.disk!.sha256]);
      });
    } finally {
      for (const id of ids) await cleanup(b.virsh, id);
      await env.close();
    }
  });
}

const CPU = "Test CPU model";

async function runSnapshot(
  handler: ReturnType<typeof instanceSnapshotHandler>,
  id: string,
  memory: boolean,
  url: string,
) {
  const any = packPayload("instance.snapshot", { instance_id: id, include_memory: memory, upload_url: url });
  const command = { id: `01SNAP${memory ? "M" : "D"}`, payload: { typeUrl: any.type_url, value: any.value } };
  const out = await handler.run({ command, signal: new AbortController().signal } as unknown as HandlerContext);
  return unpackResult("instance.snapshot", { type_url: out.result!.typeUrl, value: out.result!.value });
}

async function tarNames(dir: string, bytes: Uint8Array): Promise<string[]> {
  const f = `${dir}/check-${crypto.randomUUID().slice(0, 8)}.tar`;
  await Deno.writeFile(f, bytes);
  const out = await new Deno.Command("tar", { args: ["-tf", f] }).output();
  assert.ok(out.success);
  await Deno.remove(f);
  return new TextDecoder().decode(out.stdout).trim().split("\n");
}

function hostContract(label: string, make: () => Promise<Backend>): void {
  Deno.test(`LibvirtHostPort contract (${label}): save, then restore under root's own XML, resumes a domain and restores its memory into another instance; setmem and domstats work its balloon (the runtime's balloon verbs are rows of the shared contract)`, async (t) => {
    const b = await make();
    if ("skip" in b) return void await skipStep(t, b.skip);
    const env = await setup(b.virsh, { viaHelper: b.viaHelper });
    if ("skip" in env) return void await skipStep(t, env.skip);
    const { rt, srv, dir, host } = env;
    const a = `bcd-sv-${crypto.randomUUID().slice(0, 8)}`;
    const c = `bcd-sv-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const base = await makeQcow2(dir, `${a}.qcow2`, "64M");
      const sha = await sha256Hex(base);
      srv.put(`/${a}.qcow2`, base);
      const placement = { cpus: "0", mems: "", hugepages: "none" as const, balloon: true };
      await rt.define(
        record(a, { ...launch({ url: `${srv.origin}/${a}.qcow2`, sha256: sha, format: "qcow2" }), placement }),
      );
      const stateFile = `${rt.instanceDir(a)}/memory.save`;
      await t.step("a stopped domain has no memory to save", async () => {
        assert.equal((await host.save(a)).refused?.reason, "not-running");
      });
      await rt.start(a, true);
      await t.step("setmem moves the balloon within the domain's memory; domstats reads it", async () => {
        assert.deepEqual(await host.setmem(a, 48 * 1024), {});
        assert.equal((await host.setmem(a, 65 * 1024)).refused?.reason, "invalid-size");
        assert.equal((await host.domstats(a)).balloon?.maximumKiB, 64 * 1024);
      });
      await t.step("save writes instances/<id>/memory.save, 0600, and shuts the domain off", async () => {
        assert.deepEqual(await host.save(a), {});
        assert.equal(await state(rt, a), "stopped");
        assert.equal((await Deno.stat(stateFile)).mode! & 0o777, 0o600);
      });
      await t.step("restore runs it again from that state, paused, with root's rendering of its plan", async () => {
        const before = await Deno.readFile(stateFile);
        assert.deepEqual(await host.restore(a, true), {});
        assert.equal(await state(rt, a), "paused");
        const after = (await Deno.readFile(stateFile)).subarray(0, 92 + 4096);
        assert.match(new TextDecoder().decode(after.subarray(92)), /https:\/\/better-compute\.dev\/libvirt\/1/);
        assert.equal(before.length, (await Deno.stat(stateFile)).size, "the stream never moved");
      });
      await t.step("a restore of a running domain is refused", async () => {
        assert.equal((await host.restore(a, true)).refused?.reason, "invalid-state");
      });
      await t.step("the memory state restores into another instance with a flat copy of the disk", async () => {
        assert.deepEqual(await host.save(a), {});
        const cdir = rt.instanceDir(c);
        await Deno.mkdir(cdir, { recursive: true, mode: 0o700 });
        const conv = await new Deno.Command("qemu-img", {
          args: ["convert", "-f", "qcow2", "-O", "qcow2", `${rt.instanceDir(a)}/disk.qcow2`, `${cdir}/disk.qcow2`],
        }).output();
        assert.ok(conv.success, new TextDecoder().decode(conv.stderr));
        await Deno.copyFile(`${rt.instanceDir(a)}/seed.iso`, `${cdir}/seed.iso`);
        await Deno.copyFile(stateFile, `${cdir}/memory.save`);
        const plan = {
          id: c,
          allocationId: "alloc-1",
          vcpus: 1,
          memoryMiB: 64,
          image: null,
          nics: [],
          gpus: [],
          placement,
          seed: true,
          restoredFrom: "b".repeat(64),
        };
        assert.deepEqual(await host.define(plan), {});
        assert.deepEqual(await host.restore(c, false), {});
        assert.equal(await state(rt, c), "running");
        assert.equal((await rt.list()).find((d) => d.id === c)?.record?.imageSha256, "");
      });
      await t.step("a state file that is not a save image is refused bad-state-file and nothing runs", async () => {
        await rt.stop(c);
        await Deno.writeFile(`${rt.instanceDir(c)}/memory.save`, new TextEncoder().encode("<domain>not a state"));
        assert.equal((await host.restore(c, false)).refused?.reason, "bad-state-file");
        assert.equal(await state(rt, c), "stopped");
      });
      await t.step("a domain without a balloon is refused no-balloon", async () => {
        const d = `bcd-sv-${crypto.randomUUID().slice(0, 8)}`;
        await rt.define(record(d, launch({ url: `${srv.origin}/${a}.qcow2`, sha256: sha, format: "qcow2" })));
        try {
          assert.equal((await host.setmem(d, 1024)).refused?.reason, "no-balloon");
          assert.equal((await host.domstats(d)).refused?.reason, "no-balloon");
        } finally {
          await rt.delete(d);
        }
      });
    } finally {
      await cleanup(b.virsh, a);
      await cleanup(b.virsh, c);
      await env.close();
    }
  });
}

Deno.test("InstanceRuntime contract, libvirt-kvm (fake): a start libvirt fails for lack of memory is refused capacity", async (t) => {
  const env = await setup(new FakeVirsh({ memoryKiB: 100 * 1024 }));
  if ("skip" in env) return void await skipStep(t, env.skip);
  try {
    const base = await makeQcow2(env.dir, "b.qcow2", "16M");
    env.srv.put("/b.qcow2", base);
    const img = { url: `${env.srv.origin}/b.qcow2`, sha256: await sha256Hex(base), format: "qcow2" as const };
    await env.rt.define({ ...record("big", launch(img)), memoryBytes: 128 * 1024 * 1024 });
    await assert.rejects(env.rt.start("big", false), (e) => e instanceof RuntimeRefused && e.reason === "capacity");
  } finally {
    await env.close();
  }
});

Deno.test("InstanceRuntime contract (fake): a guest that ignores the shutdown is destroyed once the grace has passed", async () => {
  const virsh = new FakeVirsh({ guestsHonourShutdown: false });
  const env = await setup(virsh, { shutdownGraceMs: 60_000 });
  if ("skip" in env) return;
  try {
    const base = await makeQcow2(env.dir, "b.qcow2", "16M");
    env.srv.put("/b.qcow2", base);
    const img = { url: `${env.srv.origin}/b.qcow2`, sha256: await sha256Hex(base), format: "qcow2" as const };
    await env.rt.define(record("deaf", launch(img)));
    await env.rt.start("deaf", false);
    await env.rt.stop("deaf");
    assert.equal(await stateOf(virsh, "deaf"), "stopped");
    assert.deepEqual(virsh.calls.filter((c) => /shutdown|destroy/.test(c)), ["shutdown deaf", "destroy deaf"]);
    assert.ok(env.clock.t >= 60_000, "the destroy came only after 60 s of the injected clock");
  } finally {
    await env.close();
  }
});

Deno.test("parseVirshList() reads virsh's table and folds its states", () => {
  const text =
    ` Id   Name   State\n------\n 1    web-1   running\n 2    b       paused\n -    c       shut off\n -    d       in shutdown\n`;
  assert.deepEqual(parseVirshList(text), [
    { name: "b", state: "paused" },
    { name: "c", state: "stopped" },
    { name: "d", state: "running" },
    { name: "web-1", state: "running" },
  ]);
  assert.throws(() => parseVirshList(" 1 x weird-state\n"), VirshError);
});

Deno.test("the real libvirtd this file started is stopped by its PID", async (t) => {
  if (!real) return void await skipStep(t, "no real libvirtd was asked for");
  const b = await real;
  if ("skip" in b) return void await skipStep(t, b.skip);
  await realStop?.();
});

// ---- helpers

function launch(image: LaunchSpec["image"]): LaunchSpec {
  return {
    image,
    diskBytes: 0,
    nics: [],
    gpus: [],
    placement: null,
    hostname: "",
    userData: new TextEncoder().encode("#cloud-config\n"),
  };
}

function record(id: string, l: LaunchSpec): DomainRecord {
  return {
    id,
    allocationId: "alloc-1",
    vcpus: 1,
    memoryBytes: 64 * 1024 * 1024,
    imageSha256: l.image?.sha256 ?? "",
    gpus: [],
    launch: l,
  };
}

async function state(rt: LibvirtRuntime, id: string) {
  return (await rt.list()).find((d) => d.id === id)?.state;
}

async function setup(
  virsh: Virsh,
  opts: { shutdownGraceMs?: number; viaHelper?: boolean; owner?: string; bridges?: readonly string[] } = {},
) {
  const srv: ImageServer | { skip: string } = await startImageServer();
  if ("skip" in srv) return srv;
  const dir = await Deno.makeTempDir({ prefix: "bcd-libvirt-ct-" });
  // The data dir's parent must let QEMU's user search it, as /var/lib does on a host.
  await Deno.chmod(dir, 0o711);
  const clock = { t: 0 };
  const root = new LibvirtHost({
    virsh,
    dataDir: `${dir}/data`,
    domainType: "qemu",
    owner: opts.owner ?? "node-a",
    bridges: opts.bridges ?? [],
  });
  const store = new SnapshotStore({ dir: `${dir}/data/snapshots`, fetch: srv.fetch });
  const helper = opts.viaHelper ? await startTestHelper({ libvirt: root }) : undefined;
  const host = helper ? new HelperLibvirtHost(helper.client) : root;
  const rt = new LibvirtRuntime({
    host,
    dataDir: `${dir}/data`,
    fetch: srv.fetch,
    shutdownGraceMs: opts.shutdownGraceMs ?? 5_000,
    snapshots: store,
    cpuModel: () => Promise.resolve(CPU),
    // A clock that moves by what the runtime sleeps, and lets the fake guest's real timers run meanwhile.
    clock: {
      monotonic: () => clock.t,
      sleep: (ms) => {
        clock.t += ms;
        return new Promise((r) => setTimeout(r, 50));
      },
    },
  });
  return {
    rt,
    host,
    store,
    srv,
    dir,
    clock,
    close: async () => {
      await helper?.close();
      await srv.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}
