/**
 * Test support: the `InstanceRuntime` contract every hypervisor runtime keeps, one suite run against each
 * (`runtimes/libvirt/contract_test.ts` over the fake and the real `virsh`, `runtimes/cloudhypervisor/contract_test.ts`
 * over the fake VMM and fake systemd): a domain is defined from a verified image, moves through its states and is
 * deleted with its directory; one bcd did not make is never touched; a disk grows stopped and running, never
 * shrinks, and never past a rewritten overlay; hostile images fail the instance with the seed's reason; volumes are
 * attached by serial, hot-plugged, unplugged once the guest lets go (`detach-pending` until then) and grown live; a
 * balloon is set and read in what it leaves the guest, and the balloon loop inflates and deflates it through the
 * runtime; the identity rebind disk is hot-added, answered or not, removed, and its file zeroed and deleted either
 * way. Real qcow2 images made by qemu-img, served over loopback https.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  DetachPending,
  type DomainRecord,
  type InstanceRuntime,
  type LaunchSpec,
  RuntimeRefused,
} from "../core/converge/instances/runtime.ts";
import { parseQcow2Header, readQcow2Prefix } from "../core/images/qcow2_header.ts";
import { type ImageServer, makeQcow2, sha256Hex } from "../fixtures/libvirt/image_server.ts";
import { FileVolumeStore } from "./volumes/file_store.ts";
import type { VolumeAttachment } from "../core/volumes/grammar.ts";
import { NoBalloon } from "../core/balloon/port.ts";
import { BalloonLoop } from "../core/balloon/loop.ts";
import { ScriptedPressure } from "../core/balloon/fake_balloons.ts";
import { silentLogger } from "../core/log/mod.ts";
import { FakeClock } from "../fixtures/clock/fake_clock.ts";
import { rebindImage, rebindNonce } from "../core/rebind/mod.ts";
import { skipStep } from "../fixtures/skip_step.ts";

/** One runtime under test, with the hooks the suite needs to see past it. */
export interface RuntimeContractEnv {
  readonly rt: InstanceRuntime & {
    instanceDir(id: string): string;
    grow(id: string, bytes: number): Promise<void>;
  };
  readonly srv: ImageServer;
  /** A scratch directory. */
  readonly dir: string;
  /** Where the runtime keeps verified base images. */
  readonly imagesDir: string;
  /** Makes something under `id` that bcd did not define (a foreign domain, a directory without a record). */
  plantForeign(id: string): Promise<void>;
  /** Whether the foreign thing is still as planted. */
  foreignUntouched(id: string): Promise<boolean>;
  /** The root disk's size as the running hypervisor sees it. */
  runningDiskSize(id: string): Promise<number>;
  /**
   * The volume rows' view past the runtime (000 §Persistent volumes): the store's directory and, for a running or
   * paused domain, the volumes the hypervisor has attached (path, serial, read-only, size it was resized to or
   * `undefined`). Without it the volume rows are skipped with the reason.
   */
  readonly volumes?: {
    readonly dir: string;
    /**
     * Why a running guest cannot acknowledge a live unplug here (a real hypervisor whose test guest runs no OS),
     * which skips that step with the reason; `undefined`: it can.
     */
    readonly noUnplugAck?: string;
    attached(id: string): Promise<{ path: string; serial: string; readOnly: boolean; resizedTo?: number }[]>;
  };
  /**
   * The balloon rows' view past the runtime (000 §Memory ballooning). `noGuestDriver`: why the guest cannot follow a
   * balloon here (a real hypervisor whose test guest runs no OS), which keeps the exact sizes and the loop row
   * skipped with the reason; `setGuestUse`: makes the runtime's usage reading say the guest uses `bytes` (without
   * it the loop row is skipped).
   */
  readonly balloon?: {
    readonly noGuestDriver?: string;
    setGuestUse?(id: string, bytes: number): Promise<void>;
  };
  /**
   * The identity rebind row's guest (000 §Identity rebind). `answerNext(id)` makes the guest of running `id` answer the
   * next rebind disk hot-added to it as the guest half does (the nonce read from the disk's tar, `BCREBOUND <nonce>`
   * written into its last 4 KiB); `seen()` then says what the hypervisor showed of that disk (its device name or id,
   * its serial where the hypervisor reports one, its file), `undefined` when none was added. A guest not asked is
   * silent. `attached(id)` says whether a rebind disk is attached now. Without it the row is skipped with the reason.
   */
  readonly rebind?: {
    /** Why the guest cannot acknowledge the disk's removal here (see `volumes.noUnplugAck`); that check is skipped. */
    readonly noUnplugAck?: string;
    answerNext(id: string): { seen(): Promise<{ target: string; serial?: string; path: string } | undefined> };
    attached(id: string): Promise<boolean>;
  };
  /** Removes whatever is left of `id` (domain, unit, files). */
  cleanup(id: string): Promise<void>;
  close(): Promise<void>;
}

/** A launch of `image` with no NICs, GPUs or placement. */
export function contractLaunch(image: LaunchSpec["image"]): LaunchSpec {
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

/** A record of 1 vCPU and 64 MiB. */
export function contractRecord(id: string, l: LaunchSpec): DomainRecord {
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

async function _state(rt: InstanceRuntime, id: string) {
  return (await rt.list()).find((d) => d.id === id)?.state;
}

/** Registers the suite for `runtime` over `label`'s environment (`{ skip }` when it cannot run here). */
export function instanceRuntimeContract(
  runtime: string,
  label: string,
  make: () => Promise<RuntimeContractEnv | { skip: string }>,
): void {
  const name = (what: string) => `InstanceRuntime contract, ${runtime} (${label}): ${what}`;

  Deno.test(
    name("a domain is defined from a verified image, moves through its states and is deleted with its directory"),
    async (t) => {
      const env = await make();
      if ("skip" in env) return void await skipStep(t, env.skip);
      const { rt, srv, dir } = env;
      const id = `bcd-rt-${crypto.randomUUID().slice(0, 8)}`;
      try {
        const base = await makeQcow2(dir, "base.qcow2", "64M");
        const sha = await sha256Hex(base);
        srv.put(`/base-${id}.qcow2`, base);
        const rec = contractRecord(
          id,
          contractLaunch({ url: `${srv.origin}/base-${id}.qcow2`, sha256: sha, format: "qcow2" }),
        );
        await rt.define(rec);
        await t.step("the domain is listed stopped, carrying bcd's record", async () => {
          const d = (await rt.list()).find((x) => x.id === id);
          assert.equal(d?.state, "stopped");
          const { launch: _l, ...mark } = rec;
          assert.deepEqual(d?.record, mark);
        });
        await t.step(
          "the base image is kept as images/<sha256>.qcow2, 0644; the overlay and seed are there",
          async () => {
            const st = await Deno.stat(`${env.imagesDir}/${sha}.qcow2`);
            assert.equal(st.mode! & 0o777, 0o644);
            assert.ok((await Deno.stat(`${rt.instanceDir(id)}/disk.qcow2`)).isFile);
            assert.ok((await Deno.stat(`${rt.instanceDir(id)}/seed.iso`)).isFile);
          },
        );
        await t.step("start, pause, resume, stop", async () => {
          await rt.start(id, false);
          assert.equal(await _state(rt, id), "running");
          await rt.pause(id);
          assert.equal(await _state(rt, id), "paused");
          await rt.resume(id);
          assert.equal(await _state(rt, id), "running");
          await rt.stop(id);
          assert.equal(await _state(rt, id), "stopped");
          await rt.start(id, true);
          assert.equal(await _state(rt, id), "paused");
        });
        await t.step("a second define of the same instance is idempotent", async () => {
          await rt.define(rec);
          assert.equal((await rt.list()).filter((x) => x.id === id).length, 1);
        });
        await t.step("delete stops it and removes the directory", async () => {
          await rt.delete(id);
          assert.equal(await _state(rt, id), undefined);
          await assert.rejects(Deno.stat(rt.instanceDir(id)), Deno.errors.NotFound);
        });
      } finally {
        await env.cleanup(id);
        await env.close();
      }
    },
  );

  Deno.test(name("a domain bcd did not define is never listed as bcd's and never touched"), async (t) => {
    const env = await make();
    if ("skip" in env) return void await skipStep(t, env.skip);
    const { rt } = env;
    const id = `bcd-foreign-${crypto.randomUUID().slice(0, 8)}`;
    try {
      await env.plantForeign(id);
      assert.equal((await rt.list()).find((x) => x.id === id)?.record, undefined);
      for (const f of [() => rt.stop(id), () => rt.pause(id), () => rt.delete(id), () => rt.start(id, false)]) {
        await assert.rejects(f(), (e) => e instanceof RuntimeRefused && e.reason === "unmanaged-domain");
      }
      await assert.rejects(rt.define(contractRecord(id, contractLaunch(null))), (e) => e instanceof RuntimeRefused);
      assert.ok(await env.foreignUntouched(id), "the foreign domain is as it was");
    } finally {
      await env.cleanup(id);
      await env.close();
    }
  });

  Deno.test(
    name(
      "a disk grows stopped (qemu-img resize) and running (the hypervisor), never shrinks, and not past a rewritten overlay",
    ),
    async (t) => {
      const env = await make();
      if ("skip" in env) return void await skipStep(t, env.skip);
      const { rt, srv, dir } = env;
      const id = `bcd-grow-${crypto.randomUUID().slice(0, 8)}`;
      const M = 1024 * 1024;
      const size = async () =>
        Number(parseQcow2Header(await readQcow2Prefix(`${rt.instanceDir(id)}/disk.qcow2`)).virtualSize);
      try {
        const base = await makeQcow2(dir, "base.qcow2", "16M");
        srv.put(`/${id}.qcow2`, base);
        await rt.define(
          contractRecord(
            id,
            contractLaunch({ url: `${srv.origin}/${id}.qcow2`, sha256: await sha256Hex(base), format: "qcow2" }),
          ),
        );
        await t.step("stopped: the overlay is resized", async () => {
          await rt.grow(id, 32 * M);
          assert.equal(await size(), 32 * M);
          await rt.grow(id, 32 * M);
          assert.equal(await size(), 32 * M, "the same size is nothing to do");
        });
        await t.step("running: the hypervisor grows the disk under the guest", async () => {
          await rt.start(id, true);
          await rt.grow(id, 48 * M);
          assert.equal(await env.runningDiskSize(id), 48 * M);
        });
        await t.step("a smaller size is refused disk-shrink", async () => {
          await assert.rejects(rt.grow(id, 8 * M), (e) => e instanceof RuntimeRefused && e.reason === "disk-shrink");
        });
        await t.step("an overlay rewritten to another backing file is refused before the grow", async () => {
          await rt.stop(id);
          const out = await new Deno.Command("qemu-img", {
            args: [
              "rebase",
              "-u",
              "-f",
              "qcow2",
              "-F",
              "raw",
              "-b",
              "/etc/hostname",
              `${rt.instanceDir(id)}/disk.qcow2`,
            ],
          }).output();
          assert.ok(out.success);
          const before = await size();
          await assert.rejects(
            rt.grow(id, before + 16 * M),
            (e) => e instanceof RuntimeRefused && e.reason === "backing-mismatch",
          );
          assert.equal(await size(), before);
        });
      } finally {
        await env.cleanup(id);
        await env.close();
      }
    },
  );

  Deno.test(name("hostile images fail the instance with the seed's reason and no domain opens them"), async (t) => {
    const env = await make();
    if ("skip" in env) return void await skipStep(t, env.skip);
    const { rt, srv, dir } = env;
    const ids: string[] = [];
    try {
      const cases: Array<[string, string[], string]> = [
        ["a backing file (the host's disk)", ["-u", "-F", "raw", "-b", "/dev/sda"], "backing-file"],
        ["an external data file", ["-o", `data_file=${dir}/ext.raw`], "data-file"],
        [
          "encryption (qcow2 AES)",
          ["--object", "secret,id=s0,data=pw", "-o", "encrypt.format=aes,encrypt.key-secret=s0"],
          "encrypted",
        ],
      ];
      for (const [what, extra, reason] of cases) {
        await t.step(`a base with ${what} is refused ${reason}`, async () => {
          const id = `bcd-bad-${crypto.randomUUID().slice(0, 8)}`;
          ids.push(id);
          const img = await makeQcow2(dir, `${id}.qcow2`, "16M", extra);
          const sha = await sha256Hex(img);
          srv.put(`/${id}.qcow2`, img);
          await assert.rejects(
            rt.define(
              contractRecord(id, contractLaunch({ url: `${srv.origin}/${id}.qcow2`, sha256: sha, format: "qcow2" })),
            ),
            (e) => e instanceof RuntimeRefused && e.reason === reason,
          );
          assert.equal(await _state(rt, id), undefined);
          await assert.rejects(Deno.stat(`${env.imagesDir}/${sha}.qcow2`), Deno.errors.NotFound);
        });
      }
      await t.step("a digest mismatch and a plain http URL are refused before anything is kept", async () => {
        const id = `bcd-bad-${crypto.randomUUID().slice(0, 8)}`;
        srv.put(`/${id}.qcow2`, await makeQcow2(dir, `${id}.qcow2`, "16M"));
        const url = `${srv.origin}/${id}.qcow2`;
        await assert.rejects(
          rt.define(contractRecord(id, contractLaunch({ url, sha256: "0".repeat(64), format: "qcow2" }))),
          (e) => e instanceof RuntimeRefused && e.reason === "digest-mismatch",
        );
        srv.redirect(`/${id}-r.qcow2`, url.replace("https:", "http:"));
        await assert.rejects(
          rt.define(
            contractRecord(
              id,
              contractLaunch({ url: `${srv.origin}/${id}-r.qcow2`, sha256: "0".repeat(64), format: "qcow2" }),
            ),
          ),
          (e) => e instanceof RuntimeRefused && e.reason === "not-https",
        );
        assert.equal(await _state(rt, id), undefined);
      });
      await t.step(
        "an overlay rewritten to another backing file after a run is refused at the next start",
        async () => {
          const id = `bcd-bad-${crypto.randomUUID().slice(0, 8)}`;
          ids.push(id);
          const base = await makeQcow2(dir, `${id}.qcow2`, "16M");
          srv.put(`/${id}.qcow2`, base);
          await rt.define(
            contractRecord(
              id,
              contractLaunch({ url: `${srv.origin}/${id}.qcow2`, sha256: await sha256Hex(base), format: "qcow2" }),
            ),
          );
          const out = await new Deno.Command("qemu-img", {
            args: [
              "rebase",
              "-u",
              "-f",
              "qcow2",
              "-F",
              "raw",
              "-b",
              "/etc/hostname",
              `${rt.instanceDir(id)}/disk.qcow2`,
            ],
          }).output();
          assert.ok(out.success);
          await assert.rejects(
            rt.start(id, false),
            (e) => e instanceof RuntimeRefused && e.reason === "backing-mismatch",
          );
          assert.equal(await _state(rt, id), "stopped");
        },
      );
    } finally {
      for (const id of ids) await env.cleanup(id);
      await env.close();
    }
  });

  Deno.test(
    name(
      "volumes are raw disks by serial from the start, read-only when asked, hot-plugged and unplugged live, grown live, and recorded while stopped",
    ),
    async (t) => {
      const env = await make();
      if ("skip" in env) return void await skipStep(t, env.skip);
      if (!env.volumes) {
        await skipStep(t, `${runtime} (${label}) has no volume view for this suite`);
        return void await env.close();
      }
      const { rt, srv, dir } = env;
      const vols = env.volumes;
      const setVolumes = rt.setVolumes?.bind(rt);
      const growVolume = rt.growVolume?.bind(rt);
      const id = `bcd-vol-${crypto.randomUUID().slice(0, 8)}`;
      const M = 1024 * 1024;
      const store = new FileVolumeStore({ dir: vols.dir });
      const att = (v: string, readOnly: boolean): VolumeAttachment => ({
        volumeId: v,
        serial: `disk-${v}`,
        readOnly,
      });
      const seen = async () =>
        (await vols.attached(id)).map((d) => [d.path, d.serial, d.readOnly] as const).sort((a, b) =>
          a[0] < b[0] ? -1 : 1
        );
      const recorded = async () => (await rt.list()).find((d) => d.id === id)?.record?.volumes?.map((v) => v.volumeId);
      try {
        assert.ok(setVolumes && growVolume, `${runtime} attaches volumes (setVolumes, growVolume)`);
        for (const v of ["va", "vb", "vc"]) await store.create(v, `disk-${v}`, 8 * M);
        const base = await makeQcow2(dir, `${id}.qcow2`, "16M");
        srv.put(`/${id}.qcow2`, base);
        const l = contractLaunch({ url: `${srv.origin}/${id}.qcow2`, sha256: await sha256Hex(base), format: "qcow2" });
        await t.step(
          "a define carries the volumes; the start attaches them raw, by serial, read-only when asked",
          async () => {
            await rt.define({ ...contractRecord(id, l), volumes: [att("va", false), att("vb", true)] });
            assert.deepEqual(await recorded(), ["va", "vb"]);
            await rt.start(id, false);
            assert.deepEqual(await seen(), [
              [store.rawPath("va"), "disk-va", false],
              [store.rawPath("vb"), "disk-vb", true],
            ]);
          },
        );
        await t.step("a running domain has another volume hot-plugged, by serial", async () => {
          await setVolumes(id, [att("va", false), att("vb", true), att("vc", false)]);
          assert.deepEqual(await seen(), [
            [store.rawPath("va"), "disk-va", false],
            [store.rawPath("vb"), "disk-vb", true],
            [store.rawPath("vc"), "disk-vc", false],
          ]);
          assert.deepEqual((await recorded())?.sort(), ["va", "vb", "vc"]);
          await setVolumes(id, [att("va", false), att("vb", true), att("vc", false)]);
          assert.equal((await seen()).length, 3, "the same volumes again is nothing to do");
        });
        await t.step(
          "a paused guest cannot acknowledge an unplug: detach-pending (retried, not a failure), and the volume stays recorded",
          async () => {
            await rt.pause(id);
            await assert.rejects(
              setVolumes(id, [att("va", false), att("vc", false)]),
              (e) => e instanceof DetachPending && e.reason === "detach-pending" && /volume vb/.test(e.message),
            );
            assert.deepEqual((await recorded())?.sort(), ["va", "vb", "vc"], "the one-writer hold stays");
            await rt.resume(id);
          },
        );
        if (vols.noUnplugAck) await skipStep(t, `live unplug: ${vols.noUnplugAck}`);
        else {
          await t.step("a running domain has a volume unplugged once the guest lets it go", async () => {
            await setVolumes(id, [att("va", false), att("vc", false)]);
            assert.deepEqual(await seen(), [
              [store.rawPath("va"), "disk-va", false],
              [store.rawPath("vc"), "disk-vc", false],
            ]);
            assert.deepEqual((await recorded())?.sort(), ["va", "vc"]);
          });
        }
        await t.step("a grown volume is resized live under the guest", async () => {
          await store.grow("vc", 16 * M);
          await growVolume(id, "vc", 16 * M);
          assert.equal((await vols.attached(id)).find((d) => d.path === store.rawPath("vc"))?.resizedTo, 16 * M);
        });
        await t.step("a stopped domain's volumes are recorded and attached at its next start", async () => {
          await rt.stop(id);
          await rt.list();
          await setVolumes(id, [att("vb", true)]);
          assert.deepEqual(await recorded(), ["vb"]);
          await rt.start(id, false);
          assert.deepEqual(await seen(), [[store.rawPath("vb"), "disk-vb", true]]);
          await rt.stop(id);
        });
      } finally {
        await env.cleanup(id);
        await env.close();
      }
    },
  );

  Deno.test(
    name(
      "a balloon leaves the guest whole KiB of its memory and is read back; bad sizes and a stopped guest are refused; a guest defined without one answers NoBalloon",
    ),
    async (t) => {
      const env = await make();
      if ("skip" in env) return void await skipStep(t, env.skip);
      if (!env.balloon) {
        await skipStep(t, `${runtime} (${label}) has no balloon view for this suite`);
        return void await env.close();
      }
      const { rt, srv, dir } = env;
      const view = env.balloon;
      const a = `bcd-bal-${crypto.randomUUID().slice(0, 8)}`;
      const d = `bcd-nob-${crypto.randomUUID().slice(0, 8)}`;
      const M = 1024 * 1024;
      try {
        assert.ok(rt.readBalloon && rt.setBalloon, `${runtime} has the balloon verbs (readBalloon, setBalloon)`);
        const read = rt.readBalloon.bind(rt);
        const set = rt.setBalloon.bind(rt);
        const base = await makeQcow2(dir, `${a}.qcow2`, "16M");
        srv.put(`/${a}.qcow2`, base);
        const l = contractLaunch({ url: `${srv.origin}/${a}.qcow2`, sha256: await sha256Hex(base), format: "qcow2" });
        await rt.define(contractRecord(a, { ...l, placement: BALLOON_PLACEMENT }));
        await rt.define(contractRecord(d, l));
        const refused = (reason: string) => (e: unknown) => e instanceof RuntimeRefused && e.reason === reason;
        await t.step("a stopped guest's balloon is refused not-running", async () => {
          await assert.rejects(read(a), refused("not-running"));
          await assert.rejects(set(a, 48 * M), refused("not-running"));
        });
        await t.step("a guest defined without a balloon answers NoBalloon, stopped or running", async () => {
          await assert.rejects(read(d), NoBalloon);
          await assert.rejects(set(d, 32 * M), NoBalloon);
          await rt.start(d, true);
          await assert.rejects(read(d), NoBalloon);
          await assert.rejects(set(d, 32 * M), NoBalloon);
        });
        await rt.start(a, true);
        await t.step("setBalloon leaves the guest the size asked; readBalloon reports what it is left", async () => {
          await set(a, 48 * M);
          const r = await read(a);
          assert.ok(r.usedBytes === null || (r.usedBytes >= 0 && r.usedBytes <= 64 * M), String(r.usedBytes));
          if (view.noGuestDriver) {
            assert.ok(r.currentBytes > 0 && r.currentBytes <= 64 * M, String(r.currentBytes));
          } else {
            assert.equal(r.currentBytes, 48 * M);
            await set(a, 64 * M - 1024);
            assert.ok((await read(a)).currentBytes >= 64 * M - 1024, "a size in KiB is never less for the guest");
            await set(a, 64 * M);
            assert.equal((await read(a)).currentBytes, 64 * M, "all of its memory: the balloon is empty");
          }
        });
        if (view.noGuestDriver) await skipStep(t, `exact balloon sizes: ${view.noGuestDriver}`);
        await t.step("a size that is not whole KiB is a RangeError; one above its memory is invalid-size", async () => {
          await assert.rejects(set(a, 48 * M + 1), RangeError);
          await assert.rejects(set(a, 0), RangeError);
          await assert.rejects(set(a, 65 * M), refused("invalid-size"));
        });
      } finally {
        await env.cleanup(a);
        await env.cleanup(d);
        await env.close();
      }
    },
  );

  Deno.test(
    name(
      "the balloon loop inflates a guest under host pressure down to its floor, deflates it when the pressure ends, and leaves a guest without a balloon alone",
    ),
    async (t) => {
      const env = await make();
      if ("skip" in env) return void await skipStep(t, env.skip);
      const view = env.balloon;
      if (!view?.setGuestUse || view.noGuestDriver) {
        await skipStep(t, view?.noGuestDriver ?? `${runtime} (${label}) cannot set a guest's use here`);
        return void await env.close();
      }
      const { rt, srv, dir } = env;
      const a = `bcd-bal-${crypto.randomUUID().slice(0, 8)}`;
      const d = `bcd-nob-${crypto.randomUUID().slice(0, 8)}`;
      const M = 1024 * 1024;
      try {
        assert.ok(rt.readBalloon && rt.setBalloon, `${runtime} has the balloon verbs (readBalloon, setBalloon)`);
        const base = await makeQcow2(dir, `${a}.qcow2`, "16M");
        srv.put(`/${a}.qcow2`, base);
        const l = contractLaunch({ url: `${srv.origin}/${a}.qcow2`, sha256: await sha256Hex(base), format: "qcow2" });
        await rt.define(contractRecord(a, { ...l, placement: BALLOON_PLACEMENT }));
        await rt.define(contractRecord(d, l));
        await rt.start(a, false);
        await rt.start(d, false);
        const G = 1024 * M;
        const pressure = new ScriptedPressure({ memTotalBytes: G, memAvailableBytes: 0, someAvg10: 40 });
        const loop = new BalloonLoop({
          pressure,
          candidates: () => [a, d].map((id) => ({ id, runtime, memoryBytes: 64 * M })),
          port: (r) =>
            r === runtime ? { readBalloon: rt.readBalloon!.bind(rt), setBalloon: rt.setBalloon!.bind(rt) } : undefined,
          floorPercent: 50,
          clock: new FakeClock(),
          log: silentLogger(),
        });
        const left = async () => (await rt.readBalloon!(a)).currentBytes;
        await t.step(
          "its use sets its floor: taken down to its use plus 10% of its memory, in whole pages",
          async () => {
            await view.setGuestUse!(a, 48 * M);
            await loop.pass();
            // 48 MiB + 6.4 MiB, rounded up to a whole 4 KiB page.
            assert.equal(await left(), Math.ceil((48 * M + 6.4 * M) / 4096) * 4096);
            assert.deepEqual((await loop.pass())?.steps, [], "at its floor nothing more is taken");
          },
        );
        await t.step("using less: a quarter of its memory a pass, down to the 50% floor and no lower", async () => {
          await view.setGuestUse!(a, 16 * M);
          const from = await left();
          await loop.pass();
          assert.equal(await left(), from - 16 * M);
          await loop.pass();
          assert.equal(await left(), 32 * M);
          assert.deepEqual((await loop.pass())?.steps, []);
          assert.deepEqual(loop.reclaimed(), [{ instance: a, bytes: 32 * M }]);
        });
        await t.step("a guest without a balloon is left alone (it lends nothing)", async () => {
          assert.ok(!loop.reclaimed().some((x) => x.instance === d));
          await assert.rejects(rt.readBalloon!(d), NoBalloon);
        });
        await t.step("pressure over: deflated a quarter of its memory a pass, back to all of it", async () => {
          pressure.now = { memTotalBytes: G, memAvailableBytes: 900 * M, someAvg10: 0 };
          await loop.pass();
          assert.equal(await left(), 48 * M);
          await loop.pass();
          assert.equal(await left(), 64 * M);
          assert.deepEqual((await loop.pass())?.steps, []);
          assert.deepEqual(loop.reclaimed(), [{ instance: a, bytes: 0 }]);
        });
      } finally {
        await env.cleanup(a);
        await env.cleanup(d);
        await env.close();
      }
    },
  );

  Deno.test(
    name(
      "identity rebind hot-adds the 1 MiB disk as vdz (serial bc-rebind), reads the answer, removes the disk, and zeroes and deletes the file either way",
    ),
    async (t) => {
      const env = await make();
      if ("skip" in env) return void await skipStep(t, env.skip);
      if (!env.rebind) {
        await skipStep(t, `${runtime} (${label}) has no rebind guest for this suite`);
        return void await env.close();
      }
      const { rt, srv, dir } = env;
      const guest = env.rebind;
      const rebind = rt.rebind?.bind(rt);
      const id = `bcd-rb-${crypto.randomUUID().slice(0, 8)}`;
      const file = () => `${rt.instanceDir(id)}/rebind.raw`;
      const image = (nonce: string) => rebindImage({ account: "ubuntu", principals: "exec-r1\n" }, nonce);
      try {
        assert.ok(rebind, `${runtime} rebinds (rebind)`);
        const base = await makeQcow2(dir, `${id}.qcow2`, "16M");
        srv.put(`/${id}.qcow2`, base);
        await rt.define(
          contractRecord(
            id,
            contractLaunch({ url: `${srv.origin}/${id}.qcow2`, sha256: await sha256Hex(base), format: "qcow2" }),
          ),
        );
        await rt.start(id, false);
        const removed = async (t2: Deno.TestContext) => {
          if (guest.noUnplugAck) return void await skipStep(t2, `the disk's removal: ${guest.noUnplugAck}`);
          await t2.step("the disk is removed", async () => assert.equal(await guest.attached(id), false));
        };
        await t.step(
          "a guest that answers: true; the disk was vdz on the file, and is removed; the file is gone",
          async (t2) => {
            const nonce = rebindNonce();
            const answering = guest.answerNext(id);
            assert.equal(await rebind(id, image(nonce), nonce), true);
            const seen = await answering.seen();
            assert.equal(seen?.target, "vdz", "hot-added as vdz");
            assert.equal(seen?.path, file());
            if (seen?.serial !== undefined) assert.equal(seen.serial, "bc-rebind");
            await removed(t2);
            await assert.rejects(Deno.stat(file()), Deno.errors.NotFound, "the file is deleted");
          },
        );
        await t.step("a silent guest: false after the wait; the disk removed, the file deleted", async (t2) => {
          await rt.stop(id);
          await rt.start(id, false);
          const nonce = rebindNonce();
          assert.equal(await rebind(id, image(nonce), nonce), false);
          await removed(t2);
          await assert.rejects(Deno.stat(file()), Deno.errors.NotFound);
        });
        await t.step("a stopped domain is refused not-running, and the file is deleted", async () => {
          await rt.stop(id);
          const nonce = rebindNonce();
          await assert.rejects(
            rebind(id, image(nonce), nonce),
            (e) => e instanceof RuntimeRefused && e.reason === "not-running",
          );
          await assert.rejects(Deno.stat(file()), Deno.errors.NotFound);
        });
      } finally {
        await env.cleanup(id);
        await env.close();
      }
    },
  );
}

/** A placement asking for a balloon (one host CPU, no NUMA nodes, no huge pages). */
const BALLOON_PLACEMENT = { cpus: "0", mems: "", hugepages: "none" as const, balloon: true };
