import assert from "node:assert/strict";
import { ConditionSet } from "../converge/conditions.ts";
import { type ApplyContext, ConvergenceEngine } from "../converge/engine.ts";
import { silentLogger } from "../log/mod.ts";
import { externallyManagedHost, HostConverger, hostSectionConverger, REBOOT_REQUIRED } from "./converger.ts";
import { FakeHugepages, FakeSysctl } from "./fakes.ts";
import { HostUnitError, hugepagesUnit, sysctlUnit, type UnitDriver, type UnitResult } from "./unit.ts";
import type { UnitName } from "./units.ts";

const ctx = (): ApplyContext => ({
  generation: 1,
  conditions: new ConditionSet({ monotonic: () => 0 }),
  log: silentLogger(),
});
const section = (units: Record<string, unknown>) => ({
  units: Object.entries(units).map(([name, s]) => ({ name, settings_json: JSON.stringify(s) })),
});

function setup() {
  const sysctl = new FakeSysctl({ "net.ipv4.ip_forward": "0", "vm.swappiness": "60" });
  const huge = new FakeHugepages({ "2M": [0] });
  return { sysctl, huge, host: new HostConverger([sysctlUnit(sysctl), hugepagesUnit(huge)]) };
}

Deno.test("HostConverger converges sysctl and hugepages, then a second pass takes no step", async () => {
  const { sysctl, huge, host } = setup();
  const spec = section({
    sysctl: { values: { "net.ipv4.ip_forward": 1 } },
    hugepages: { pools: [{ size: "2M", count: 16 }] },
  });
  assert.deepEqual(await host.converge(spec, ctx()), { kind: "converged" });
  assert.equal(sysctl.live.get("net.ipv4.ip_forward"), "1");
  assert.equal(huge.pool("2M").total, 16);
  const before = [sysctl.applied.length, huge.applied.length];
  assert.deepEqual(await host.converge(spec, ctx()), { kind: "converged" });
  assert.deepEqual([sysctl.applied.length, huge.applied.length], before);
});

Deno.test("HostConverger puts a value drifted by hand back, and only it", async () => {
  const { sysctl, host } = setup();
  const spec = section({ sysctl: { values: { "net.ipv4.ip_forward": "1", "vm.swappiness": "10" } } });
  await host.converge(spec, ctx());
  sysctl.live.set("vm.swappiness", "33");
  await host.converge(spec, ctx());
  assert.deepEqual(sysctl.applied.at(-1), [{ op: "set", key: "vm.swappiness", value: "10" }]);
  assert.equal(sysctl.live.get("vm.swappiness"), "10");
});

Deno.test("HostConverger undoes exactly what bcd did when a unit leaves the section", async () => {
  const { sysctl, huge, host } = setup();
  huge.pool("2M").total = 4;
  await host.converge(
    section({ sysctl: { values: { "net.ipv4.ip_forward": "1" } }, hugepages: { pools: [{ size: "2M", count: 16 }] } }),
    ctx(),
  );
  sysctl.live.set("vm.swappiness", "5"); // changed by someone else: not bcd's to undo
  assert.deepEqual(await host.converge(section({}), ctx()), { kind: "converged" });
  assert.equal(sysctl.live.get("net.ipv4.ip_forward"), "0");
  assert.equal(sysctl.live.get("vm.swappiness"), "5");
  assert.equal(huge.pool("2M").total, 4);
  assert.equal(sysctl.managed.size + huge.managed.size, 0);
});

Deno.test("HostConverger never shrinks a pool below its pages in use and reports the rest as PROGRESSING", async () => {
  const { huge, host } = setup();
  huge.pool("2M").total = 10;
  huge.pool("2M").used = 6;
  const out = await host.converge(section({ hugepages: { pools: [{ size: "2M", count: 2 }] } }), ctx());
  assert.equal(huge.pool("2M").total, 6);
  assert.deepEqual(out, {
    kind: "progressing",
    reason: "UnitProgressing:hugepages",
    message: "hugepages 2M: 6 pages, 2 wanted",
  });
});

Deno.test("HostConverger refuses a bad section whole, before anything is applied", async (t) => {
  const rows: { name: string; units: Record<string, unknown>; reason: string; message: RegExp }[] = [
    {
      name: "unknown key in one unit",
      units: { sysctl: { values: { "vm.swappiness": "1" } }, hugepages: { pools: [], spare: true } },
      reason: "InvalidUnitSettings",
      message: /^hugepages: unknown key settings\.spare$/,
    },
    {
      name: "a unit this build has no driver for",
      units: { sysctl: { values: { "vm.swappiness": "1" } }, "kubernetes-join": {} },
      reason: "UnitUnsupported:kubernetes-join",
      message: /no kubernetes-join unit/,
    },
  ];
  for (const r of rows) {
    await t.step(r.name, async () => {
      const { sysctl, huge, host } = setup();
      const out = await host.converge(section(r.units), ctx());
      assert.equal(out.kind, "failed");
      assert.ok(out.kind === "failed" && out.reason === r.reason && r.message.test(out.message), JSON.stringify(out));
      assert.equal(sysctl.applied.length + huge.applied.length, 0);
    });
  }
});

/** A unit that records its calls and does what it is told. */
function fakeUnit(name: UnitName, calls: string[], result: UnitResult | "fail" | "retry"): UnitDriver {
  return {
    name,
    parse: (raw) => raw,
    converge(desired) {
      calls.push(`${name}:${desired === undefined ? "absent" : "wanted"}`);
      if (result === "fail") return Promise.reject(new HostUnitError(name, true, `${name}: the tool said no`));
      if (result === "retry") return Promise.reject(new Error("helper: unreachable"));
      return Promise.resolve(result);
    },
  };
}

Deno.test("a failed unit stops exactly the units that depend on it and the section FAILS naming it", async () => {
  const calls: string[] = [];
  const host = new HostConverger([
    fakeUnit("kernel-modules", calls, "fail"),
    fakeUnit("sysctl", calls, { steps: 1 }),
    fakeUnit("hugepages", calls, { steps: 0 }),
    fakeUnit("nvidia-driver", calls, { steps: 0 }),
    fakeUnit("kubernetes-join", calls, { steps: 0 }),
  ]);
  const out = await host.converge(
    section({ "kernel-modules": {}, sysctl: {}, hugepages: {}, "nvidia-driver": {}, "kubernetes-join": {} }),
    ctx(),
  );
  assert.deepEqual(calls, ["kernel-modules:wanted", "sysctl:wanted", "hugepages:wanted"]);
  assert.deepEqual(out, {
    kind: "failed",
    reason: "UnitFailed:kernel-modules",
    message:
      "kernel-modules: the tool said no; not applied: nvidia-driver (waits for kernel-modules), kubernetes-join (waits for kernel-modules)",
  });
});

Deno.test("a retryable unit error keeps the section PROGRESSING and holds back its dependents", async () => {
  const calls: string[] = [];
  const host = new HostConverger([
    fakeUnit("sysctl", calls, "retry"),
    fakeUnit("hugepages", calls, { steps: 0 }),
    fakeUnit("kubernetes-join", calls, { steps: 0 }),
  ]);
  const out = await host.converge(section({ sysctl: {}, hugepages: {}, "kubernetes-join": {} }), ctx());
  assert.deepEqual(calls, ["sysctl:wanted", "hugepages:wanted"]);
  assert.equal(out.kind, "progressing");
  assert.ok(out.kind === "progressing" && out.reason === "UnitProgressing:sysctl");
});

Deno.test("a unit that needs a reboot raises RebootRequired and the section stays PROGRESSING; bcd never reboots", async () => {
  const calls: string[] = [];
  let result: UnitResult = { steps: 1, rebootRequired: "nvidia-driver: 550.54 installed; the running driver is 535.1" };
  const driver: UnitDriver = {
    ...fakeUnit("nvidia-driver", calls, { steps: 0 }),
    converge: () => Promise.resolve(result),
  };
  const host = new HostConverger([driver, fakeUnit("mig-layout", calls, { steps: 0 })]);
  const c = ctx();
  const out = await host.converge(section({ "nvidia-driver": {}, "mig-layout": {} }), c);
  assert.equal(out.kind, "progressing");
  assert.ok(out.kind === "progressing" && out.reason === REBOOT_REQUIRED);
  assert.match(out.kind === "progressing" ? out.message : "", /mig-layout \(waits for nvidia-driver\)/);
  assert.ok(c.conditions.has(REBOOT_REQUIRED, "host"));
  assert.deepEqual(calls, []);
  result = { steps: 0 };
  assert.deepEqual(await host.converge(section({ "nvidia-driver": {}, "mig-layout": {} }), c), { kind: "converged" });
  assert.equal(c.conditions.has(REBOOT_REQUIRED, "host"), false);
  assert.deepEqual(calls, ["mig-layout:wanted"]);
});

Deno.test("[host] units = false: a host section is UNSUPPORTED HostManagedExternally, no condition, generation observed", async () => {
  const engine = new ConvergenceEngine({ convergers: [externallyManagedHost()], log: silentLogger() });
  engine.hold({ generation: 7, specHash: "h", sections: { host: section({ sysctl: { values: {} } }) } });
  const snap = await engine.pass();
  const host = snap.sections.find((s) => s.section === "host");
  assert.equal(host?.state, "UNSUPPORTED");
  assert.equal(host?.reason, "HostManagedExternally");
  assert.deepEqual(snap.conditions, []);
  assert.equal(snap.observed_generation, 7);
  engine.hold({ generation: 8, specHash: "h2", sections: {} });
  const empty = await engine.pass();
  assert.equal(empty.sections.find((s) => s.section === "host")?.state, "CONVERGED");
});

Deno.test("the engine reports a converged host section through hostSectionConverger", async () => {
  const { host } = setup();
  const engine = new ConvergenceEngine({ convergers: [hostSectionConverger(host)], log: silentLogger() });
  engine.hold({
    generation: 3,
    specHash: "h",
    sections: { host: section({ sysctl: { values: { "vm.swappiness": "10" } } }) },
  });
  const snap = await engine.pass();
  assert.equal(snap.sections.find((s) => s.section === "host")?.state, "CONVERGED");
  assert.equal(snap.observed_generation, 3);
});
