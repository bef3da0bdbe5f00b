/**
 * One contract for the host units' ports, run against every implementation: the in-memory fakes
 * (`core/host/fakes.ts`), the real backends over temp roots, the same through a real helper socket, the real
 * `/proc/sys` inside a network namespace the test creates, and the real 2 MiB huge page pool of this host (restored
 * after the test). Each real variant checks for what it needs and is ignored with the reason printed.
 */
import assert from "node:assert/strict";
import { ConditionSet } from "../../core/converge/conditions.ts";
import { FakeHugepages, FakeSysctl } from "../../core/host/fakes.ts";
import { HostConverger, type HugepagePort, hugepagesUnit, type SysctlPort, sysctlUnit } from "../../core/host/mod.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { HelperHugepages, HelperSysctl } from "../helper/ports_host.ts";
import { startTestHelper } from "../helper/helper_testing.ts";
import { SysctlFiles } from "./sysctl_files.ts";
import { SysfsHugepages } from "./sysfs_hugepages.ts";

const ctx = () => ({ generation: 1, conditions: new ConditionSet({ monotonic: () => 0 }), log: silentLogger() });
const section = (units: Record<string, unknown>) => ({
  units: Object.entries(units).map(([name, s]) => ({ name, settings_json: JSON.stringify(s) })),
});

/** A sysctl port with a hand on the kernel's values. */
interface SysctlSubject {
  port: SysctlPort;
  peek(key: string): Promise<string>;
  poke(key: string, value: string): Promise<void>;
  close(): Promise<void>;
}

/** The contract: keys `net.ipv4.ip_forward` (starts "0") and `net.core.somaxconn` (starts anything) exist. */
async function sysctlContract(t: Deno.TestContext, make: () => Promise<SysctlSubject>) {
  const s = await make();
  try {
    const host = new HostConverger([sysctlUnit(s.port)]);
    const somaxconn = await s.peek("net.core.somaxconn");
    const want = section({ sysctl: { values: { "net.ipv4.ip_forward": 1, "net.core.somaxconn": "1234" } } });
    await t.step("converges and reads back", async () => {
      assert.deepEqual(await host.converge(want, ctx()), { kind: "converged" });
      assert.equal(await s.peek("net.ipv4.ip_forward"), "1");
      assert.equal(await s.peek("net.core.somaxconn"), "1234");
      const o = await s.port.read([]);
      assert.deepEqual(o.managed["net.ipv4.ip_forward"], { value: "1", original: "0" });
    });
    await t.step("an unchanged host plans nothing", async () => {
      const o = await s.port.read(["net.ipv4.ip_forward", "net.core.somaxconn"]);
      assert.equal(o.live["net.ipv4.ip_forward"], "1");
      assert.equal(Object.keys(o.managed).length, 2);
    });
    await t.step("a value changed by hand is put back", async () => {
      await s.poke("net.ipv4.ip_forward", "0");
      assert.deepEqual(await host.converge(want, ctx()), { kind: "converged" });
      assert.equal(await s.peek("net.ipv4.ip_forward"), "1");
    });
    await t.step("a key this kernel lacks fails the unit terminally, naming it", async () => {
      const out = await host.converge(section({ sysctl: { values: { "net.ipv4.no_such_knob": "1" } } }), ctx());
      assert.equal(out.kind, "failed");
      assert.match(out.kind === "failed" ? out.message : "", /this kernel has no key net\.ipv4\.no_such_knob/);
    });
    await t.step("the unit removed: the originals come back and bcd manages nothing", async () => {
      assert.deepEqual(await host.converge(section({}), ctx()), { kind: "converged" });
      assert.equal(await s.peek("net.ipv4.ip_forward"), "0");
      assert.equal(await s.peek("net.core.somaxconn"), somaxconn);
      assert.deepEqual((await s.port.read([])).managed, {});
    });
  } finally {
    await s.close();
  }
}

async function _tree(): Promise<{ root: string; procSys: string; etc: string }> {
  const root = await Deno.makeTempDir({ prefix: "bcd-sysctl-" });
  const procSys = `${root}/proc/sys`;
  await Deno.mkdir(`${procSys}/net/ipv4`, { recursive: true });
  await Deno.mkdir(`${procSys}/net/core`, { recursive: true });
  await Deno.writeTextFile(`${procSys}/net/ipv4/ip_forward`, "0\n");
  await Deno.writeTextFile(`${procSys}/net/core/somaxconn`, "4096\n");
  return { root, procSys, etc: `${root}/etc` };
}

function _fileSubject(procSys: string, port: SysctlPort, close: () => Promise<void>): SysctlSubject {
  return {
    port,
    peek: async (k) => (await Deno.readTextFile(`${procSys}/${k.replaceAll(".", "/")}`)).trim(),
    poke: (k, v) => Deno.writeTextFile(`${procSys}/${k.replaceAll(".", "/")}`, `${v}\n`),
    close,
  };
}

Deno.test("sysctl port contract: in-memory fake", async (t) => {
  await sysctlContract(t, () => {
    const f = new FakeSysctl({ "net.ipv4.ip_forward": "0", "net.core.somaxconn": "4096" });
    return Promise.resolve({
      port: f,
      peek: (k) => Promise.resolve(f.live.get(k)!),
      poke: (k, v) => Promise.resolve(void f.live.set(k, v)),
      close: () => Promise.resolve(),
    });
  });
});

Deno.test("sysctl port contract: SysctlFiles over temp roots, the file records the originals", async (t) => {
  const { root, procSys, etc } = await _tree();
  const port = new SysctlFiles({ procSys, etc });
  await sysctlContract(t, () => Promise.resolve(_fileSubject(procSys, port, () => Promise.resolve())));
  await t.step("the file is bcd's fixed 90-bcd.conf and holds nothing after the removal", async () => {
    const text = await Deno.readTextFile(`${etc}/sysctl.d/90-bcd.conf`);
    assert.doesNotMatch(text, /net\./);
  });
  await Deno.remove(root, { recursive: true });
});

Deno.test("sysctl port contract: through a real helper socket (sysctl.read / sysctl.apply)", async (t) => {
  const { root, procSys, etc } = await _tree();
  const h = await startTestHelper({ sysctl: new SysctlFiles({ procSys, etc }) });
  await sysctlContract(t, () => Promise.resolve(_fileSubject(procSys, new HelperSysctl(h.client), () => h.close())));
  await Deno.remove(root, { recursive: true });
});

Deno.test("the helper refuses a sysctl key outside the allowlist before anything runs", async () => {
  const { root, procSys, etc } = await _tree();
  const h = await startTestHelper({ sysctl: new SysctlFiles({ procSys, etc }) });
  try {
    await assert.rejects(
      h.client.call("sysctl.apply", { steps: [{ op: "set", key: "kernel.core_pattern", value: "|/tmp/x" }] }),
      /invalid-argument|not an allowed sysctl key/,
    );
    await assert.rejects(h.client.call("sysctl.read", { keys: ["../../etc/shadow"] }), /not an allowed sysctl key/);
  } finally {
    await h.close();
    await Deno.remove(root, { recursive: true });
  }
});

// ---- the real kernel: /proc/sys inside a network namespace this test creates ----

function _which(tool: string): boolean {
  for (const d of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      if (Deno.statSync(`${d}/${tool}`).isFile) return true;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory)) throw e;
    }
  }
  return false;
}

const _root = Deno.uid() === 0;
const _netnsSkip = !_root ? "not root" : !_which("ip") ? "no ip (iproute2)" : "";
if (_netnsSkip) console.log(`sysctl netns contract ignored: ${_netnsSkip}`);

async function _run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  const err = new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")}: ${err}`);
  return new TextDecoder().decode(out.stdout);
}

Deno.test({
  name: "sysctl port contract: the real /proc/sys of a network namespace, SysctlFiles run inside it",
  ignore: _netnsSkip !== "",
  fn: async (t) => {
    const ns = `bcdsys${Deno.pid}${Math.floor(Math.random() * 1e6)}`;
    await _run("ip", ["netns", "add", ns]);
    const etc = await Deno.makeTempDir({ prefix: "bcd-sysctl-netns-" });
    const probe = new URL("./_sysctl_netns_probe.ts", import.meta.url).pathname;
    const deno = Deno.execPath();
    /** Runs one SysctlFiles call inside the namespace (network sysctls are per namespace). */
    const call = async (method: "read" | "apply", arg: unknown) =>
      JSON.parse(await _run("ip", ["netns", "exec", ns, deno, "run", "-A", probe, etc, method, JSON.stringify(arg)]));
    const port: SysctlPort = { read: (keys) => call("read", keys), apply: (steps) => call("apply", steps) };
    const hostSomaxconn = (await Deno.readTextFile("/proc/sys/net/core/somaxconn")).trim();
    const peek = async (k: string) =>
      (await _run("ip", ["netns", "exec", ns, "cat", `/proc/sys/${k.replaceAll(".", "/")}`])).trim();
    try {
      await sysctlContract(t, () =>
        Promise.resolve({
          port,
          peek,
          poke: (k, v) =>
            _run("ip", ["netns", "exec", ns, "sh", "-c", `echo ${v} > /proc/sys/${k.replaceAll(".", "/")}`]).then(
              () => {},
            ),
          close: () => Promise.resolve(),
        }));
      await t.step("the host's own namespace was never touched", async () => {
        assert.equal((await Deno.readTextFile("/proc/sys/net/core/somaxconn")).trim(), hostSomaxconn);
      });
    } finally {
      await _run("ip", ["netns", "del", ns]);
      await Deno.remove(etc, { recursive: true });
    }
  },
});

// ---- huge pages ----

async function hugepageContract(t: Deno.TestContext, port: HugepagePort, total: () => Promise<number>) {
  const host = new HostConverger([hugepagesUnit(port)]);
  const before = await total();
  const want = before + 2;
  await t.step("sets the 2M pool and reads it back", async () => {
    const out = await host.converge(section({ hugepages: { pools: [{ size: "2M", count: want }] } }), ctx());
    if (out.kind === "progressing") {
      // Memory too fragmented to reserve two more 2 MiB pages: reported, never wrong.
      assert.match(out.message, /2M: \d+ pages, \d+ wanted/);
    } else {
      assert.deepEqual(out, { kind: "converged" });
      assert.equal(await total(), want);
    }
    const m = (await port.read()).managed;
    assert.deepEqual(m, [{ size: "2M", count: want, original: before }]);
  });
  await t.step("the unit removed: the pool's original count comes back", async () => {
    assert.deepEqual(await host.converge(section({}), ctx()), { kind: "converged" });
    assert.equal(await total(), before);
    assert.deepEqual((await port.read()).managed, []);
  });
}

Deno.test("hugepage port contract: in-memory fake", async (t) => {
  const f = new FakeHugepages({ "2M": [0] });
  await hugepageContract(t, f, () => Promise.resolve(f.pool("2M").total));
});

const _sys2M = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
function _hugeSkip(): string {
  if (!_root) return "not root";
  try {
    Deno.statSync(_sys2M);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return "this kernel offers no 2 MiB huge pages";
    throw e;
  }
  return "";
}
const _realHugeSkip = _hugeSkip();
if (_realHugeSkip) console.log(`real huge page contract ignored: ${_realHugeSkip}`);

Deno.test({
  name: "hugepage port contract: this host's real 2 MiB pool through a real helper, restored after the test",
  ignore: _realHugeSkip !== "",
  fn: async (t) => {
    const etc = await Deno.makeTempDir({ prefix: "bcd-huge-" });
    const before = (await Deno.readTextFile(_sys2M)).trim();
    const h = await startTestHelper({ hugepages: new SysfsHugepages({ sys: "/sys", etc }) });
    try {
      await hugepageContract(
        t,
        new HelperHugepages(h.client),
        async () => Number((await Deno.readTextFile(_sys2M)).trim()),
      );
    } finally {
      await Deno.writeTextFile(_sys2M, `${before}\n`);
      await h.close();
      await Deno.remove(etc, { recursive: true });
    }
  },
});

Deno.test("a huge page size the host lacks is reported by name, never as a permission error", async () => {
  // A sysfs tree with only 2 MiB pages: this host's kernel offers 1 GiB pages too, so the tree stands in for one that
  // does not.
  const root = await Deno.makeTempDir({ prefix: "bcd-huge-tree-" });
  const d = `${root}/sys/kernel/mm/hugepages/hugepages-2048kB`;
  await Deno.mkdir(d, { recursive: true });
  await Deno.writeTextFile(`${d}/nr_hugepages`, "0\n");
  await Deno.writeTextFile(`${d}/free_hugepages`, "0\n");
  const port = new SysfsHugepages({ sys: `${root}/sys`, etc: `${root}/etc` });
  const out = await new HostConverger([hugepagesUnit(port)]).converge(
    section({ hugepages: { pools: [{ size: "1G", count: 1 }] } }),
    ctx(),
  );
  assert.deepEqual(out, {
    kind: "failed",
    reason: "UnitFailed:hugepages",
    message: "hugepages: this host has no 1G huge pages (no hugepages-1048576kB in sysfs)",
  });
  await assert.rejects(port.apply([{ op: "set", size: "1G", count: 1 }]), /this host has no 1G huge pages/);
  await Deno.remove(root, { recursive: true });
});
