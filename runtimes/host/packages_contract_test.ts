/**
 * One contract for the package units' port (`nvidia-driver`, `fabric-manager`, `container-toolkit`), run against the
 * in-memory fake (`core/host/fakes.ts`), the real backend (`AptPackages`) driving fake `dpkg-query`, `apt-get` and
 * `systemctl` executables (`fixtures/host/`) and `fixtures/nvidia/fake-nvidia-smi` for the running driver, with every
 * argv recorded and asserted, and the same through a real helper socket. This machine has no NVIDIA packages to
 * install, so no variant runs the real package manager.
 */
import assert from "node:assert/strict";
import { ConditionSet } from "../../core/converge/conditions.ts";
import { FakePackages } from "../../core/host/fakes.ts";
import { HostConverger, type PackagePort, packageUnit, REBOOT_REQUIRED } from "../../core/host/mod.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { HelperPackages } from "../helper/ports_host.ts";
import { startTestHelper } from "../helper/helper_testing.ts";
import { AptPackages } from "./apt_packages.ts";

const FIX = new URL("../../fixtures/", import.meta.url).pathname;

const section = (units: Record<string, unknown>) => ({
  units: Object.entries(units).map(([name, s]) => ({ name, settings_json: JSON.stringify(s) })),
});

/** A port over a host with a hand on it. */
interface PackagesSubject {
  port: PackagePort;
  installed(pkg: string): Promise<string | null>;
  /** The driver the kernel runs from now on (a reboot), `null` for none. */
  boot(version: string | null): Promise<void>;
  stopService(svc: string): Promise<void>;
  /** The tools' argv lines, where real executables run. */
  argv?(): Promise<string[]>;
  close(): Promise<void>;
}

const DRIVER = "nvidia-driver-550", FM = "nvidia-fabricmanager-550", CTK = "nvidia-container-toolkit";
const WANT = section({
  "nvidia-driver": { package: DRIVER, version: "550.90.07-0ubuntu1" },
  "fabric-manager": { package: FM, version: "550.90.07-1" },
  "container-toolkit": { version: "1.16.2-1" },
});

async function packagesContract(t: Deno.TestContext, make: () => Promise<PackagesSubject>) {
  const s = await make();
  const conditions = new ConditionSet({ monotonic: () => 0 });
  const ctx = () => ({ generation: 1, conditions, log: silentLogger() });
  const host = new HostConverger(
    (["nvidia-driver", "fabric-manager", "container-toolkit"] as const).map((u) => packageUnit(u, s.port)),
  );
  const changes = async (from: number) =>
    ((await s.argv?.()) ?? []).slice(from).filter((l) => /^apt-get|^systemctl enable/.test(l));
  try {
    await t.step("a new driver is installed, then RebootRequired; the units that need it wait", async () => {
      const out = await host.converge(WANT, ctx());
      assert.equal(out.kind, "progressing");
      assert.equal(out.kind === "progressing" ? out.reason : "", REBOOT_REQUIRED);
      assert.match(out.kind === "progressing" ? out.message : "", /a reboot loads 550\.90\.07/);
      assert.match(out.kind === "progressing" ? out.message : "", /fabric-manager \(waits for nvidia-driver\)/);
      assert.ok(conditions.has(REBOOT_REQUIRED, "host"));
      assert.equal(await s.installed(DRIVER), "550.90.07-0ubuntu1");
      assert.equal(await s.installed(FM), null, "Fabric Manager waits for the driver");
      assert.equal(await s.installed(CTK), null, "the toolkit waits for the driver");
      const argv = await changes(0);
      if (s.argv) {
        assert.deepEqual(argv, [
          `apt-get DEBIAN_FRONTEND=noninteractive install -y --no-install-recommends --allow-downgrades -o ` +
          `Dpkg::Options::=--force-confold ${DRIVER}=550.90.07-0ubuntu1`,
        ]);
      }
    });
    await t.step("bcd never reboots: the next pass still waits for the reboot, installing nothing", async () => {
      const before = (await s.argv?.())?.length ?? 0;
      const out = await host.converge(WANT, ctx());
      assert.equal(out.kind === "progressing" ? out.reason : out.kind, REBOOT_REQUIRED);
      assert.deepEqual(await changes(before), []);
    });
    await t.step("after the reboot: Fabric Manager installed and its service on, the toolkit installed", async () => {
      await s.boot("550.90.07");
      const before = (await s.argv?.())?.length ?? 0;
      assert.deepEqual(await host.converge(WANT, ctx()), { kind: "converged" });
      assert.equal(conditions.has(REBOOT_REQUIRED, "host"), false, "the condition is cleared");
      assert.equal(await s.installed(FM), "550.90.07-1");
      assert.equal(await s.installed(CTK), "1.16.2-1");
      if (s.argv) {
        const argv = await changes(before);
        assert.equal(argv.length, 3, argv.join("\n"));
        assert.match(argv[0]!, new RegExp(` ${FM}=550\\.90\\.07-1$`));
        assert.equal(argv[1], "systemctl enable --now nvidia-fabricmanager");
        assert.match(argv[2]!, / nvidia-container-toolkit=1\.16\.2-1$/);
      }
    });
    await t.step("an unchanged host: nothing installed, nothing enabled", async () => {
      const before = (await s.argv?.())?.length ?? 0;
      assert.deepEqual(await host.converge(WANT, ctx()), { kind: "converged" });
      assert.deepEqual(await changes(before), []);
    });
    await t.step("Fabric Manager stopped by hand is enabled and started again, and only that", async () => {
      await s.stopService("nvidia-fabricmanager");
      const before = (await s.argv?.())?.length ?? 0;
      assert.deepEqual(await host.converge(WANT, ctx()), { kind: "converged" });
      if (s.argv) assert.deepEqual(await changes(before), ["systemctl enable --now nvidia-fabricmanager"]);
    });
    await t.step("a version the repository lacks fails the unit terminally with apt-get's words", async () => {
      const bad = section({
        "nvidia-driver": { package: DRIVER, version: "550.90.07-0ubuntu1" },
        "container-toolkit": { version: "9.9.9-1" },
      });
      const out = await host.converge(bad, ctx());
      assert.equal(out.kind, "failed");
      assert.equal(out.kind === "failed" ? out.reason : "", "UnitFailed:container-toolkit");
      assert.match(
        out.kind === "failed" ? out.message : "",
        /Version '9\.9\.9-1' for 'nvidia-container-toolkit' was not found/,
      );
      assert.equal(await s.installed(CTK), "1.16.2-1", "the installed version stays");
    });
    await t.step("the units dropped from the section: packages and services stay as they are", async () => {
      const before = (await s.argv?.())?.length ?? 0;
      assert.deepEqual(await host.converge(section({}), ctx()), { kind: "converged" });
      assert.equal(await s.installed(DRIVER), "550.90.07-0ubuntu1");
      assert.equal(await s.installed(FM), "550.90.07-1");
      assert.deepEqual(await changes(before), []);
    });
  } finally {
    await s.close();
  }
}

Deno.test("package units port contract: in-memory fake", async (t) => {
  await packagesContract(t, () => {
    const f = new FakePackages();
    f.installed.set(DRIVER, "535.161.08-0ubuntu1");
    f.running = "535.161.08";
    for (const a of [`${DRIVER}=550.90.07-0ubuntu1`, `${FM}=550.90.07-1`, `${CTK}=1.16.2-1`]) f.available.add(a);
    return Promise.resolve({
      port: f,
      installed: (p) => Promise.resolve(f.installed.get(p) ?? null),
      boot: (v) => Promise.resolve(void (f.running = v)),
      stopService: (svc) => Promise.resolve(void f.active.delete(svc)),
      close: () => Promise.resolve(),
    });
  });
});

/** A state dir for the fake tools and wrappers that point them at it. */
async function _fakeHost(): Promise<{ state: string; tools: Record<string, string> }> {
  const state = await Deno.makeTempDir({ prefix: "bcd-packages-" });
  await Deno.mkdir(`${state}/installed`);
  await Deno.writeTextFile(`${state}/installed/${DRIVER}`, "535.161.08-0ubuntu1");
  await Deno.writeTextFile(`${state}/running`, "535.161.08");
  await Deno.writeTextFile(
    `${state}/available`,
    [`${DRIVER}=550.90.07-0ubuntu1`, `${FM}=550.90.07-1`, `${CTK}=1.16.2-1`, ""].join("\n"),
  );
  const tools: Record<string, string> = {};
  for (const tool of ["dpkg-query", "apt-get", "systemctl"]) {
    tools[tool] = `${state}/${tool}`;
    await Deno.writeTextFile(
      tools[tool]!,
      `#!/bin/sh\nexport FAKE_PKG_STATE='${state}'\nexec '${FIX}host/fake-${tool}' "$@"\n`,
    );
  }
  // nvidia-smi answers with the running driver's version, or fails as without a loaded driver.
  tools["nvidia-smi"] = `${state}/nvidia-smi`;
  await Deno.writeTextFile(
    tools["nvidia-smi"]!,
    `#!/bin/sh\nv=$(cat '${state}/running')\n` +
      `[ -n "$v" ] || { echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2; exit 9; }\n` +
      `sed "s#<driver_version>[^<]*</driver_version>#<driver_version>$v</driver_version>#" ` +
      `'${FIX}nvidia/hgx8_mig2.xml' > '${state}/smi.xml'\n` +
      `export FAKE_SMI_XML='${state}/smi.xml' FAKE_SMI_LIST='${FIX}nvidia/hgx8_mig2.list.txt' FAKE_SMI_LOG='${state}/smi.log'\n` +
      `exec '${FIX}nvidia/fake-nvidia-smi' "$@"\n`,
  );
  for (const p of Object.values(tools)) await Deno.chmod(p, 0o755);
  return { state, tools };
}

function _aptSubject(state: string, port: PackagePort, close: () => Promise<void>): PackagesSubject {
  return {
    port,
    installed: (p) =>
      Deno.readTextFile(`${state}/installed/${p}`).catch((e) => {
        if (e instanceof Deno.errors.NotFound) return null;
        throw e;
      }),
    boot: (v) => Deno.writeTextFile(`${state}/running`, v ?? ""),
    stopService: (svc) => Deno.remove(`${state}/active/${svc}`),
    argv: async () => (await Deno.readTextFile(`${state}/argv.log`)).split("\n").filter(Boolean),
    close,
  };
}

function _apt(tools: Record<string, string>): AptPackages {
  return new AptPackages({
    dpkgQuery: tools["dpkg-query"],
    aptGet: tools["apt-get"],
    systemctl: tools["systemctl"],
    nvidiaSmi: tools["nvidia-smi"],
  });
}

Deno.test("package units port contract: AptPackages running fake dpkg-query, apt-get, systemctl, nvidia-smi", async (t) => {
  const { state, tools } = await _fakeHost();
  await packagesContract(t, () => Promise.resolve(_aptSubject(state, _apt(tools), () => Promise.resolve())));
  await t.step("a host without a loaded driver reads none running", async () => {
    await Deno.writeTextFile(`${state}/running`, "");
    assert.equal((await _apt(tools).read("nvidia-driver", DRIVER)).running, null);
  });
  await Deno.remove(state, { recursive: true });
});

Deno.test("package units port contract: through a real helper socket (package.read / package.apply)", async (t) => {
  const { state, tools } = await _fakeHost();
  const h = await startTestHelper({ packages: _apt(tools) });
  await packagesContract(t, () => Promise.resolve(_aptSubject(state, new HelperPackages(h.client), () => h.close())));
  await Deno.remove(state, { recursive: true });
});

Deno.test("the helper refuses a package, version or step outside the unit's before any tool runs", async () => {
  const { state, tools } = await _fakeHost();
  const h = await startTestHelper({ packages: _apt(tools) });
  try {
    const rows: [Record<string, unknown>, RegExp][] = [
      [{ unit: "nvidia-driver", package: "bash", steps: [{ op: "service" }] }, /package "bash" is not a package of/],
      [{ unit: "kubelet", package: "nvidia-driver", steps: [] }, /unit "kubelet"/],
      [{ unit: "container-toolkit", package: "nvidia-driver", steps: [] }, /not a package of container-toolkit/],
      [
        { unit: "nvidia-driver", package: DRIVER, steps: [{ op: "install", package: DRIVER, version: "1; reboot" }] },
        /steps\[0\]\.version/,
      ],
      [
        {
          unit: "nvidia-driver",
          package: DRIVER,
          steps: [{ op: "install", package: "nvidia-driver-1", version: "1" }],
        },
        /steps\[0\]\.package/,
      ],
      [
        { unit: "nvidia-driver", package: DRIVER, steps: [{ op: "install", package: DRIVER, version: "-o=x" }] },
        /steps\[0\]\.version/,
      ],
      [{ unit: "nvidia-driver", package: DRIVER, steps: [{ op: "service" }] }, /has no service/],
      [{ unit: "fabric-manager", package: FM, steps: [{ op: "service", name: "sshd" }] }, /unknown|name/],
      [{ unit: "fabric-manager", package: FM, steps: [{ op: "remove" }] }, /steps\[0\]\.op/],
    ];
    for (const [args, msg] of rows) {
      await assert.rejects(h.client.call("package.apply", args as never), msg, JSON.stringify(args));
    }
    const argv = await Deno.readTextFile(`${state}/argv.log`).catch(() => "");
    assert.doesNotMatch(argv, /apt-get|systemctl/, "no tool ran");
  } finally {
    await h.close();
    await Deno.remove(state, { recursive: true });
  }
});
