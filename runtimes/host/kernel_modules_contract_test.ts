/**
 * One contract for the `kernel-modules` unit's port, run against every implementation: the in-memory fake
 * (`core/host/fakes.ts`), the real backend (`ModprobeModules`) over a temp `/etc` root and a fake `/proc/modules`
 * driving `fixtures/host/fake-modprobe` (this machine has no `modprobe` and no `/lib/modules`, so the real backend
 * runs a fake executable; its argv is recorded and asserted), the same through a real helper socket, and the real
 * kernel where `modprobe` can load a harmless module (ignored with the reason printed otherwise).
 */
import assert from "node:assert/strict";
import { ConditionSet } from "../../core/converge/conditions.ts";
import { FakeKernelModules } from "../../core/host/fakes.ts";
import { HostConverger, type KernelModulesPort, kernelModulesUnit } from "../../core/host/mod.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { HelperKernelModules } from "../helper/ports_host.ts";
import { startTestHelper } from "../helper/helper_testing.ts";
import { ModprobeModules } from "./modprobe_modules.ts";

const FAKE_MODPROBE = new URL("../../fixtures/host/fake-modprobe", import.meta.url).pathname;

const ctx = () => ({ generation: 1, conditions: new ConditionSet({ monotonic: () => 0 }), log: silentLogger() });
const section = (units: Record<string, unknown>) => ({
  units: Object.entries(units).map(([name, s]) => ({ name, settings_json: JSON.stringify(s) })),
});

/** A port with a hand on the kernel: the modules the contract uses and what it may do by hand. */
interface ModulesSubject {
  port: KernelModulesPort;
  /** A module not loaded that the kernel can load. */
  fresh: string;
  /** A module already loaded, not by bcd. */
  present: string;
  /** Options `fresh` takes. */
  options: string;
  loaded(): Promise<string[]>;
  unloadByHand(name: string): Promise<void>;
  /** Marks a module in use (its unload fails); absent where the test cannot. */
  busy?(name: string): void;
  /** modprobe's argv per run, where a real executable runs. */
  argv?(): Promise<string[]>;
  /** bcd's two files, where they are on disk. */
  files?(): Promise<{ load: string | undefined; options: string | undefined }>;
  close(): Promise<void>;
}

async function modulesContract(t: Deno.TestContext, make: () => Promise<ModulesSubject>) {
  const s = await make();
  try {
    const host = new HostConverger([kernelModulesUnit(s.port)]);
    const want = section({
      "kernel-modules": { modules: [{ name: s.fresh, options: s.options }, { name: s.present }] },
    });
    await t.step("converges: the fresh module loaded with its options, the present one only persisted", async () => {
      const argvBefore = (await s.argv?.())?.length ?? 0;
      assert.deepEqual(await host.converge(want, ctx()), { kind: "converged" });
      const loaded = await s.loaded();
      assert.ok(loaded.includes(s.fresh) && loaded.includes(s.present), loaded.join(","));
      const managed = (await s.port.read()).managed;
      assert.deepEqual(managed.find((m) => m.name === s.fresh), {
        name: s.fresh,
        options: s.options,
        loadedByBcd: true,
      });
      assert.deepEqual(managed.find((m) => m.name === s.present), { name: s.present, loadedByBcd: false });
      const argv = await s.argv?.();
      if (argv) assert.deepEqual(argv.slice(argvBefore), [`-- ${s.fresh} ${s.options}`]);
      const files = await s.files?.();
      if (files) {
        assert.match(files.load ?? "", new RegExp(`^# bcd-loaded: ${s.fresh}\n${s.fresh}$`, "m"));
        assert.match(files.load ?? "", new RegExp(`^${s.present}$`, "m"));
        assert.doesNotMatch(files.load ?? "", new RegExp(`bcd-loaded: ${s.present}`));
        assert.match(files.options ?? "", new RegExp(`^options ${s.fresh} ${s.options}$`, "m"));
      }
    });
    await t.step("an unchanged host: no modprobe runs", async () => {
      const before = (await s.argv?.())?.length;
      assert.deepEqual(await host.converge(want, ctx()), { kind: "converged" });
      assert.equal((await s.argv?.())?.length, before);
    });
    await t.step("a module unloaded by hand is loaded again", async () => {
      await s.unloadByHand(s.fresh);
      assert.deepEqual(await host.converge(want, ctx()), { kind: "converged" });
      assert.ok((await s.loaded()).includes(s.fresh));
      assert.equal((await s.port.read()).managed.find((m) => m.name === s.fresh)?.loadedByBcd, true, "still bcd's");
    });
    await t.step("a module this kernel lacks fails the unit terminally, naming it and modprobe's words", async () => {
      const bad = section({ "kernel-modules": { modules: [{ name: s.fresh }, { name: "bcd_no_such_module" }] } });
      const out = await host.converge(bad, ctx());
      assert.equal(out.kind, "failed");
      assert.equal(out.kind === "failed" ? out.reason : "", "UnitFailed:kernel-modules");
      assert.match(out.kind === "failed" ? out.message : "", /not loaded: bcd_no_such_module \(.*not found/);
    });
    if (s.busy) {
      await t.step("a module bcd loaded but in use stays, recorded, and the unit waits", async () => {
        s.busy!(s.fresh);
        const out = await host.converge(section({ "kernel-modules": { modules: [{ name: s.present }] } }), ctx());
        assert.equal(out.kind, "progressing");
        assert.match(
          out.kind === "progressing" ? out.message : "",
          new RegExp(`could not unload ${s.fresh} \\(.*in use`),
        );
        assert.ok((await s.port.read()).managed.some((m) => m.name === s.fresh && m.loadedByBcd));
        s.busy!("");
      });
    }
    await t.step("the unit removed: only the module bcd loaded is unloaded, the files hold nothing", async () => {
      assert.deepEqual(await host.converge(section({}), ctx()), { kind: "converged" });
      const loaded = await s.loaded();
      assert.ok(!loaded.includes(s.fresh), "bcd's module unloaded");
      assert.ok(loaded.includes(s.present), "the module bcd found loaded stays");
      assert.deepEqual((await s.port.read()).managed, []);
      const files = await s.files?.();
      if (files) assert.deepEqual(files, { load: undefined, options: undefined });
    });
  } finally {
    await s.close();
  }
}

Deno.test("kernel-modules port contract: in-memory fake", async (t) => {
  await modulesContract(t, () => {
    const f = new FakeKernelModules(["br_netfilter", "overlay"], ["overlay"]);
    return Promise.resolve({
      port: f,
      fresh: "br_netfilter",
      present: "overlay",
      options: "debug=1",
      loaded: () => Promise.resolve([...f.loaded]),
      unloadByHand: (n) => Promise.resolve(void f.loaded.delete(n)),
      busy: (n) => {
        f.busy.clear();
        if (n) f.busy.add(n);
      },
      close: () => Promise.resolve(),
    });
  });
});

/** A temp root: `etc/`, a fake `/proc/modules` holding `overlay`, and a wrapper running the fake modprobe. */
async function _fakeKernel(): Promise<{ root: string; etc: string; proc: string; modprobe: string; busyFile: string }> {
  const root = await Deno.makeTempDir({ prefix: "bcd-modules-" });
  const proc = `${root}/modules`;
  await Deno.writeTextFile(proc, "overlay 155648 0 - Live 0x0000000000000000\n");
  const busyFile = `${root}/busy`;
  await Deno.writeTextFile(busyFile, "");
  const modprobe = `${root}/modprobe`;
  await Deno.writeTextFile(
    modprobe,
    `#!/bin/sh\nexport FAKE_MODPROBE_PROC='${proc}' FAKE_MODPROBE_LOG='${root}/argv.log' ` +
      `FAKE_MODPROBE_AVAILABLE='br_netfilter overlay' FAKE_MODPROBE_BUSY="$(cat '${busyFile}')"\n` +
      `exec '${FAKE_MODPROBE}' "$@"\n`,
  );
  await Deno.chmod(modprobe, 0o755);
  return { root, etc: `${root}/etc`, proc, modprobe, busyFile };
}

function _fileSubject(k: Awaited<ReturnType<typeof _fakeKernel>>, port: KernelModulesPort, close: () => Promise<void>) {
  const read = (p: string) =>
    Deno.readTextFile(p).catch((e) => {
      if (e instanceof Deno.errors.NotFound) return undefined;
      throw e;
    });
  return {
    port,
    fresh: "br_netfilter",
    present: "overlay",
    options: "debug=1",
    loaded: async () => (await Deno.readTextFile(k.proc)).split("\n").filter(Boolean).map((l) => l.split(" ")[0]!),
    unloadByHand: async (n: string) => {
      const lines = (await Deno.readTextFile(k.proc)).split("\n").filter((l) => l && !l.startsWith(`${n} `));
      await Deno.writeTextFile(k.proc, lines.map((l) => `${l}\n`).join(""));
    },
    busy: (n: string) => Deno.writeTextFileSync(k.busyFile, n),
    argv: async () => (await read(`${k.root}/argv.log`) ?? "").split("\n").filter(Boolean),
    files: async () => ({
      load: await read(`${k.etc}/modules-load.d/bcd.conf`),
      options: await read(`${k.etc}/modprobe.d/bcd.conf`),
    }),
    close,
  };
}

Deno.test("kernel-modules port contract: ModprobeModules over a temp /etc, running a fake modprobe", async (t) => {
  const k = await _fakeKernel();
  const port = new ModprobeModules({ etc: k.etc, procModules: k.proc, modprobe: k.modprobe });
  await modulesContract(t, () => Promise.resolve(_fileSubject(k, port, () => Promise.resolve())));
  await Deno.remove(k.root, { recursive: true });
});

Deno.test("kernel-modules port contract: through a real helper socket (modules.read / modules.apply)", async (t) => {
  const k = await _fakeKernel();
  const h = await startTestHelper({
    modules: new ModprobeModules({ etc: k.etc, procModules: k.proc, modprobe: k.modprobe }),
  });
  await modulesContract(t, () => Promise.resolve(_fileSubject(k, new HelperKernelModules(h.client), () => h.close())));
  await Deno.remove(k.root, { recursive: true });
});

Deno.test("the helper refuses a module name or options outside modprobe's grammar before anything runs", async () => {
  const k = await _fakeKernel();
  const h = await startTestHelper({
    modules: new ModprobeModules({ etc: k.etc, procModules: k.proc, modprobe: k.modprobe }),
  });
  try {
    const rows: [unknown, RegExp][] = [
      [{ op: "load", name: "../../etc/shadow" }, /steps\[0\]\.name/],
      [{ op: "load", name: "-r" }, /steps\[0\]\.name/],
      [{ op: "load", name: "br-netfilter" }, /steps\[0\]\.name/],
      [{ op: "load", name: "dummy", options: "x=1; reboot" }, /steps\[0\]\.options/],
      [{ op: "load", name: "dummy", options: "--first-time" }, /steps\[0\]\.options/],
      [{ op: "drop", name: "dummy", unload: "yes" }, /steps\[0\]\.unload/],
      [{ op: "drop", name: "dummy", unload: true, options: "a=1" }, /unknown|options/],
      [{ op: "insmod", name: "dummy" }, /steps\[0\]\.op/],
    ];
    for (const [step, msg] of rows) {
      await assert.rejects(h.client.call("modules.apply", { steps: [step] } as never), msg, JSON.stringify(step));
    }
    assert.deepEqual(await Deno.readTextFile(`${k.root}/argv.log`).catch(() => ""), "", "modprobe never ran");
  } finally {
    await h.close();
    await Deno.remove(k.root, { recursive: true });
  }
});

// ---- the real kernel, where modprobe can load a harmless module ----

function _realSkip(): string {
  if (Deno.uid() !== 0) return "not root";
  let release: string;
  try {
    release = Deno.readTextFileSync("/proc/sys/kernel/osrelease").trim();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return "no /proc/sys/kernel/osrelease";
    throw e;
  }
  try {
    Deno.statSync(`/lib/modules/${release}/modules.dep`);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return `no /lib/modules/${release}/modules.dep (no modules for this kernel)`;
    throw e;
  }
  const has = (p: string) => {
    try {
      return Deno.statSync(p).isFile;
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return false;
      throw e;
    }
  };
  if (!["/usr/sbin/modprobe", "/sbin/modprobe"].some(has)) return "no modprobe (Debian kmod)";
  const loaded = Deno.readTextFileSync("/proc/modules");
  if (/^dummy /m.test(loaded)) return "the harmless module dummy is already loaded";
  if (loaded.trim() === "") return "no module is loaded to stand for one bcd finds loaded";
  return "";
}
const REAL_SKIP = _realSkip();
if (REAL_SKIP) console.log(`kernel-modules real kernel contract ignored: ${REAL_SKIP}`);

Deno.test({
  name: "kernel-modules port contract: the real kernel's modprobe (dummy), under a temp /etc",
  ignore: REAL_SKIP !== "",
  fn: async (t) => {
    const etc = await Deno.makeTempDir({ prefix: "bcd-modules-etc-" });
    const present = Deno.readTextFileSync("/proc/modules").split("\n")[0]!.split(" ")[0]!;
    const port = new ModprobeModules({ etc });
    await modulesContract(t, () =>
      Promise.resolve({
        port,
        fresh: "dummy",
        present,
        options: "numdummies=0",
        loaded: async () => (await Deno.readTextFile("/proc/modules")).split("\n").map((l) => l.split(" ")[0]!),
        unloadByHand: async (n) => {
          const o = await new Deno.Command("modprobe", { args: ["-r", n] }).output();
          if (!o.success) throw new Error(`modprobe -r ${n} failed`);
        },
        close: () => Deno.remove(etc, { recursive: true }),
      }));
  },
});
