import assert from "node:assert/strict";
import { type KernelModulesObserved, parseKernelModuleSettings, planKernelModules } from "./kernel_modules.ts";
import { HostSettingsError } from "./units.ts";

const rows: { name: string; modules: unknown[] | undefined; observed: KernelModulesObserved; steps: unknown[] }[] = [
  {
    name: "unchanged host: no steps",
    modules: [{ name: "br_netfilter" }],
    observed: { loaded: ["br_netfilter"], managed: [{ name: "br_netfilter", loadedByBcd: true }] },
    steps: [],
  },
  {
    name: "a dash in the name is the kernel's underscore",
    modules: [{ name: "br-netfilter" }],
    observed: { loaded: ["br_netfilter"], managed: [{ name: "br_netfilter", loadedByBcd: true }] },
    steps: [],
  },
  {
    name: "a module unloaded by hand: loaded again",
    modules: [{ name: "br_netfilter" }],
    observed: { loaded: [], managed: [{ name: "br_netfilter", loadedByBcd: true }] },
    steps: [{ op: "load", name: "br_netfilter" }],
  },
  {
    name: "new options: persisted again, nothing else",
    modules: [{ name: "nvidia", options: "NVreg_EnableGpuFirmware=0" }, { name: "overlay" }],
    observed: {
      loaded: ["nvidia", "overlay"],
      managed: [{ name: "nvidia", loadedByBcd: false }, { name: "overlay", loadedByBcd: false }],
    },
    steps: [{ op: "load", name: "nvidia", options: "NVreg_EnableGpuFirmware=0" }],
  },
  {
    name: "the unit removed: a module bcd loaded is unloaded, one it found loaded only leaves the files",
    modules: undefined,
    observed: {
      loaded: ["br_netfilter", "overlay", "ext4"],
      managed: [{ name: "br_netfilter", loadedByBcd: true }, { name: "overlay", loadedByBcd: false }],
    },
    steps: [{ op: "drop", name: "br_netfilter", unload: true }, { op: "drop", name: "overlay", unload: false }],
  },
];

Deno.test("planKernelModules() gives the minimal steps, row by row", async (t) => {
  for (const r of rows) {
    await t.step(r.name, () => {
      const desired = r.modules ? parseKernelModuleSettings({ modules: r.modules }) : undefined;
      assert.deepEqual(planKernelModules(desired, r.observed), r.steps);
    });
  }
});

Deno.test("kernel-modules settings are refused naming the unit and the key", async (t) => {
  const bad: { name: string; raw: Record<string, unknown>; msg: RegExp }[] = [
    {
      name: "unknown key",
      raw: { modules: [], blacklist: [] },
      msg: /^kernel-modules: unknown key settings\.blacklist$/,
    },
    { name: "a path as a name", raw: { modules: [{ name: "../../x" }] }, msg: /settings\.modules\[0\]\.name/ },
    {
      name: "options with a shell character",
      raw: { modules: [{ name: "nvidia", options: "a=1;reboot" }] },
      msg: /settings\.modules\[0\]\.options/,
    },
    { name: "a module twice", raw: { modules: [{ name: "a-b" }, { name: "a_b" }] }, msg: /is named twice/ },
  ];
  for (const r of bad) {
    await t.step(r.name, () => {
      assert.throws(
        () => parseKernelModuleSettings(r.raw),
        (e) => e instanceof HostSettingsError && r.msg.test(e.message),
      );
    });
  }
});
