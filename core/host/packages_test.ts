import assert from "node:assert/strict";
import {
  driverRebootReason,
  type PackageObserved,
  packageSettingsParser,
  type PackageUnit,
  planPackage,
  upstreamVersion,
} from "./packages.ts";
import { HostSettingsError } from "./units.ts";

const rows: { name: string; unit: PackageUnit; version?: string; observed: PackageObserved; steps: unknown[] }[] = [
  {
    name: "unchanged driver: no steps",
    unit: "nvidia-driver",
    version: "550.90.07-1",
    observed: { installed: "550.90.07-1", running: "550.90.07" },
    steps: [],
  },
  {
    name: "another driver installed: install the wanted version",
    unit: "nvidia-driver",
    version: "550.90.07-1",
    observed: { installed: "535.161.08-1", running: "535.161.08" },
    steps: [{ op: "install", package: "nvidia-driver", version: "550.90.07-1" }],
  },
  {
    name: "Fabric Manager installed but its service stopped: only the service",
    unit: "fabric-manager",
    version: "550.90.07-1",
    observed: { installed: "550.90.07-1", service: { enabled: true, active: false } },
    steps: [{ op: "service" }],
  },
  {
    name: "Fabric Manager absent: install, then the service",
    unit: "fabric-manager",
    version: "550.90.07-1",
    observed: { installed: null, service: { enabled: false, active: false } },
    steps: [{ op: "install", package: "nvidia-fabricmanager", version: "550.90.07-1" }, { op: "service" }],
  },
  {
    name: "the toolkit unchanged: no steps (no service)",
    unit: "container-toolkit",
    version: "1.16.2-1",
    observed: { installed: "1.16.2-1" },
    steps: [],
  },
  {
    name: "a unit dropped from the section: nothing, whatever is installed",
    unit: "fabric-manager",
    observed: { installed: "550.90.07-1", service: { enabled: false, active: false } },
    steps: [],
  },
];

Deno.test("planPackage(): the minimal steps, row by row", async (t) => {
  for (const r of rows) {
    await t.step(r.name, () => {
      const desired = r.version === undefined ? undefined : packageSettingsParser(r.unit)({ version: r.version });
      assert.deepEqual(planPackage(r.unit, desired, r.observed), r.steps);
    });
  }
});

Deno.test("driverRebootReason(): a reboot is needed until the kernel runs the installed upstream version", () => {
  const want = packageSettingsParser("nvidia-driver")({
    version: "1:550.90.07-0ubuntu1",
    package: "nvidia-driver-550",
  });
  assert.equal(upstreamVersion(want.version), "550.90.07");
  assert.equal(driverRebootReason(want, { installed: want.version, running: "550.90.07" }), undefined);
  assert.match(driverRebootReason(want, { installed: want.version, running: "535.161.08" })!, /runs 535\.161\.08/);
  assert.match(driverRebootReason(want, { installed: want.version, running: null })!, /runs no NVIDIA driver/);
});

Deno.test("package settings: refused with the unit and key named", async (t) => {
  const bad: [PackageUnit, Record<string, unknown>, RegExp][] = [
    ["nvidia-driver", {}, /settings\.version null is missing/],
    ["nvidia-driver", { version: "550; reboot" }, /settings\.version .* is not a Debian package version/],
    ["nvidia-driver", { version: "-o=x" }, /is not a Debian package version/],
    ["nvidia-driver", { version: "550.90.07-1", package: "bash" }, /settings\.package "bash" is not a package name/],
    ["container-toolkit", { version: "1.0", package: "nvidia-driver" }, /starting nvidia-container-toolkit/],
    ["fabric-manager", { version: "1.0", service: "sshd" }, /unknown key settings\.service/],
  ];
  for (const [unit, raw, msg] of bad) {
    await t.step(`${unit} ${JSON.stringify(raw)}`, () => {
      assert.throws(
        () => packageSettingsParser(unit)(raw),
        (e) => e instanceof HostSettingsError && msg.test(e.message),
      );
    });
  }
});
