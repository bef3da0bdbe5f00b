import assert from "node:assert/strict";
import { type HugepageObserved, parseHugepageSettings, planHugepages } from "./hugepages.ts";
import { parseSysctlSettings, planSysctl, type SysctlObserved } from "./sysctl.ts";
import { HostSettingsError, parseHostSection } from "./units.ts";

const sysctlRows: {
  name: string;
  desired: Record<string, string> | undefined;
  observed: SysctlObserved;
  steps: unknown[];
}[] = [
  {
    name: "unchanged host: no steps",
    desired: { "net.ipv4.ip_forward": "1" },
    observed: {
      live: { "net.ipv4.ip_forward": "1" },
      managed: { "net.ipv4.ip_forward": { value: "1", original: "0" } },
    },
    steps: [],
  },
  {
    name: "a tab in the kernel's spelling is the same value",
    desired: { "net.ipv4.ip_local_port_range": "1024 65000" },
    observed: {
      live: { "net.ipv4.ip_local_port_range": "1024\t65000" },
      managed: { "net.ipv4.ip_local_port_range": { value: "1024 65000", original: "32768 60999" } },
    },
    steps: [],
  },
  {
    name: "live value drifted by hand: that key alone is set again",
    desired: { "net.ipv4.ip_forward": "1", "vm.swappiness": "10" },
    observed: {
      live: { "net.ipv4.ip_forward": "0", "vm.swappiness": "10" },
      managed: {
        "net.ipv4.ip_forward": { value: "1", original: "0" },
        "vm.swappiness": { value: "10", original: "60" },
      },
    },
    steps: [{ op: "set", key: "net.ipv4.ip_forward", value: "1" }],
  },
  {
    name: "a new key: set (its original is recorded by the set)",
    desired: { "vm.swappiness": "10" },
    observed: { live: { "vm.swappiness": "60" }, managed: {} },
    steps: [{ op: "set", key: "vm.swappiness", value: "10" }],
  },
  {
    name: "a key already at its value but not yet in bcd's file: set, so it persists",
    desired: { "vm.swappiness": "60" },
    observed: { live: { "vm.swappiness": "60" }, managed: {} },
    steps: [{ op: "set", key: "vm.swappiness", value: "60" }],
  },
  {
    name: "a key dropped from the settings: only it is restored",
    desired: { "vm.swappiness": "10" },
    observed: {
      live: { "vm.swappiness": "10", "net.ipv4.ip_forward": "1" },
      managed: {
        "vm.swappiness": { value: "10", original: "60" },
        "net.ipv4.ip_forward": { value: "1", original: "0" },
      },
    },
    steps: [{ op: "restore", key: "net.ipv4.ip_forward" }],
  },
  {
    name: "the unit removed from the section: every key bcd manages is restored, nothing else",
    desired: undefined,
    observed: {
      live: { "vm.swappiness": "10", "net.ipv4.ip_forward": "1" },
      managed: {
        "vm.swappiness": { value: "10", original: "60" },
        "net.ipv4.ip_forward": { value: "1", original: "0" },
      },
    },
    steps: [{ op: "restore", key: "net.ipv4.ip_forward" }, { op: "restore", key: "vm.swappiness" }],
  },
  {
    name: "unit absent and nothing managed: no steps",
    desired: undefined,
    observed: { live: {}, managed: {} },
    steps: [],
  },
];

Deno.test("planSysctl() gives the minimal steps, row by row", async (t) => {
  for (const r of sysctlRows) {
    await t.step(r.name, () => {
      const desired = r.desired ? parseSysctlSettings({ values: r.desired }) : undefined;
      assert.deepEqual(planSysctl(desired, r.observed), r.steps);
    });
  }
});

const host = (total2M: number, node0: number, managed: HugepageObserved["managed"] = []): HugepageObserved => ({
  sizes: { "2M": { total: total2M, free: total2M, nodes: { "0": { total: node0, free: node0 } } } },
  managed,
});

const hugeRows: {
  name: string;
  pools: unknown[] | undefined;
  observed: HugepageObserved;
  steps?: unknown[];
  error?: RegExp;
}[] = [
  {
    name: "unchanged host: no steps",
    pools: [{ size: "2M", count: 8 }],
    observed: host(8, 8, [{ size: "2M", count: 8, original: 0 }]),
    steps: [],
  },
  {
    name: "count drifted: that pool is set",
    pools: [{ size: "2M", count: 8 }],
    observed: host(3, 3, [{ size: "2M", count: 8, original: 0 }]),
    steps: [{ op: "set", size: "2M", count: 8 }],
  },
  {
    name: "a NUMA node pool: only it is set",
    pools: [{ size: "2M", count: 8 }, { size: "2M", node: 0, count: 4 }],
    observed: host(8, 2, [{ size: "2M", count: 8, original: 0 }, { size: "2M", node: 0, count: 4, original: 0 }]),
    steps: [{ op: "set", size: "2M", node: 0, count: 4 }],
  },
  {
    name: "the unit removed: each pool bcd set is restored, nothing else",
    pools: undefined,
    observed: host(8, 8, [{ size: "2M", count: 8, original: 2 }]),
    steps: [{ op: "restore", size: "2M" }],
  },
  {
    name: "a size the host lacks is refused by name",
    pools: [{ size: "1G", count: 1 }],
    observed: host(0, 0),
    error: /this host has no 1G huge pages \(no hugepages-1048576kB in sysfs\)/,
  },
  {
    name: "a NUMA node the host lacks is refused by number",
    pools: [{ size: "2M", node: 3, count: 1 }],
    observed: host(0, 0),
    error: /no NUMA node 3/,
  },
];

Deno.test("planHugepages() gives the minimal steps, row by row", async (t) => {
  for (const r of hugeRows) {
    await t.step(r.name, () => {
      const desired = r.pools ? parseHugepageSettings({ pools: r.pools }) : undefined;
      if (r.error) assert.throws(() => planHugepages(desired, r.observed), r.error);
      else assert.deepEqual(planHugepages(desired, r.observed), r.steps);
    });
  }
});

Deno.test("unit settings are refused naming the unit and the key", async (t) => {
  const rows: { name: string; f: () => unknown; msg: RegExp }[] = [
    {
      name: "sysctl unknown key",
      f: () => parseSysctlSettings({ values: {}, extra: 1 }),
      msg: /^sysctl: unknown key settings\.extra$/,
    },
    {
      name: "sysctl key outside the allowlist",
      f: () => parseSysctlSettings({ values: { "kernel.modprobe": "/tmp/x" } }),
      msg: /^sysctl: key "kernel\.modprobe" is not a sysctl key under an allowed prefix/,
    },
    {
      name: "sysctl key with a path in it",
      f: () => parseSysctlSettings({ values: { "net.ipv4/../../x": "1" } }),
      msg: /is not a sysctl key/,
    },
    {
      name: "sysctl value on two lines",
      f: () => parseSysctlSettings({ values: { "vm.swappiness": "1\n2" } }),
      msg: /settings\.values\.vm\.swappiness .* is not one line/,
    },
    {
      name: "hugepages unknown key in a pool",
      f: () => parseHugepageSettings({ pools: [{ size: "2M", count: 1, numa: 0 }] }),
      msg: /^hugepages: unknown key settings\.pools\[0\]\.numa$/,
    },
    {
      name: "hugepages unknown size",
      f: () => parseHugepageSettings({ pools: [{ size: "16G", count: 1 }] }),
      msg: /settings\.pools\[0\]\.size "16G" is not one of 2M, 1G/,
    },
    {
      name: "hugepages pool twice",
      f: () => parseHugepageSettings({ pools: [{ size: "2M", count: 1 }, { size: "2M", count: 2 }] }),
      msg: /names a pool twice/,
    },
  ];
  for (const r of rows) {
    await t.step(r.name, () => {
      assert.throws(
        r.f,
        (e) => e instanceof HostSettingsError && r.msg.test(e.message) && e.reason === "InvalidUnitSettings",
      );
    });
  }
});

Deno.test("parseHostSection() refuses unknown units, a unit twice and settings that are not a JSON object", async (t) => {
  const rows: { name: string; units: unknown[]; reason: string }[] = [
    { name: "unknown unit", units: [{ name: "grub", settings_json: "{}" }], reason: "UnknownUnit" },
    {
      name: "unit twice",
      units: [{ name: "sysctl", settings_json: "{}" }, { name: "sysctl", settings_json: "{}" }],
      reason: "DuplicateUnit",
    },
    { name: "not JSON", units: [{ name: "sysctl", settings_json: "{" }], reason: "InvalidUnitSettings" },
    { name: "a JSON list", units: [{ name: "sysctl", settings_json: "[]" }], reason: "InvalidUnitSettings" },
    {
      name: "too large",
      units: [{ name: "sysctl", settings_json: `{"a":"${"x".repeat(70_000)}"}` }],
      reason: "InvalidUnitSettings",
    },
  ];
  for (const r of rows) {
    await t.step(r.name, () => {
      assert.throws(
        () => parseHostSection({ units: r.units }),
        (e) => e instanceof HostSettingsError && e.reason === r.reason,
      );
    });
  }
  await t.step("key order and whitespace do not matter: settings are compared canonically", () => {
    const a = parseHostSection({ units: [{ name: "sysctl", settings_json: '{"values":{"b":"1","a":"2"}}' }] });
    const b = parseHostSection({ units: [{ name: "sysctl", settings_json: '{ "values": { "a": "2", "b": "1" } }' }] });
    assert.equal(JSON.stringify(a.get("sysctl")), JSON.stringify(b.get("sysctl")));
  });
});
