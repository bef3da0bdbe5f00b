import assert from "node:assert/strict";
import { BodyError } from "./errors.ts";
import { decodeRootConfig, defaultRootConfig, encodeRootConfig, type RootConfig } from "./root_config.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const BASE = "version=1\nruntime=/run/runtime-adapter\nagent-cgroup=/sys/fs/cgroup/agent\n" +
  "workload-cgroup=/sys/fs/cgroup/workload\ndevice-timeout-ms=30000\n";

Deno.test("the default configuration round-trips in the table's order", () => {
  const body = encodeRootConfig(defaultRootConfig());
  assert.equal(
    new TextDecoder().decode(body),
    BASE + "agent-memory-low=16777216\nworkload-memory-max=134217728\nworkload-pids-max=128\n",
  );
  assert.deepEqual(decodeRootConfig(body), defaultRootConfig());
});

Deno.test("fields may come in any order, each optional field decodes", () => {
  const text = "scratch-journal=forbidden\noverlay-mode=untrusted-lowers\nmapping-count=4096\n" +
    "first-partition-bound=65536\nscratch-sectors=8\ndistro-sectors=16\n" + BASE.split("\n").reverse().join("\n")
    .trimStart() + "\n";
  const c = decodeRootConfig(enc(text));
  const want: RootConfig = {
    version: 1,
    runtime: "/run/runtime-adapter",
    agentCgroup: "/sys/fs/cgroup/agent",
    workloadCgroup: "/sys/fs/cgroup/workload",
    deviceTimeoutMs: 30000,
    scratchJournal: "forbidden",
    overlayMode: "untrusted-lowers",
    mappingCount: 4096,
    firstPartitionBound: 65536n,
    scratchSectors: 8n,
    distroSectors: 16n,
  };
  assert.deepEqual(c, want);
  assert.deepEqual(decodeRootConfig(encodeRootConfig(c)), want);
});

/** One row per rule of the seed's field table and path rules. */
const REFUSED: [string, string][] = [
  ["an unknown field", BASE + "colour=blue\n"],
  ["a field twice", BASE + "version=1\n"],
  ["a missing version", BASE.replace("version=1\n", "")],
  ["a missing runtime", BASE.replace(/runtime=.*\n/, "")],
  ["a missing agent-cgroup", BASE.replace(/agent-cgroup=.*\n/, "")],
  ["a missing workload-cgroup", BASE.replace(/workload-cgroup=.*\n/, "")],
  ["a missing device-timeout-ms", BASE.replace(/device-timeout-ms=.*\n/, "")],
  ["version 2", BASE.replace("version=1", "version=2")],
  ["a line without =", BASE + "overlay-mode\n"],
  ["a last line without newline", BASE + "workload-pids-max=1"],
  ["a timeout beyond 600,000", BASE.replace("30000", "600001")],
  ["a signed number", BASE.replace("30000", "+30000")],
  ["a leading zero", BASE.replace("30000", "030000")],
  ["an empty number", BASE.replace("30000", "")],
  ["a zero optional number", BASE + "workload-memory-max=0\n"],
  ["a number beyond u64", BASE + "agent-memory-low=18446744073709551616\n"],
  ["a mapping count beyond 4,096", BASE + "mapping-count=4097\n"],
  ["an unknown overlay mode", BASE + "overlay-mode=trusting\n"],
  ["an unknown journal policy", BASE + "scratch-journal=maybe\n"],
  ["a relative runtime", BASE.replace("runtime=/run/runtime-adapter", "runtime=run/x")],
  ["runtime /", BASE.replace("runtime=/run/runtime-adapter", "runtime=/")],
  ["a trailing /", BASE.replace("runtime=/run/runtime-adapter", "runtime=/run/x/")],
  ["an empty component", BASE.replace("runtime=/run/runtime-adapter", "runtime=/run//x")],
  ["a . component", BASE.replace("runtime=/run/runtime-adapter", "runtime=/run/./x")],
  ["a .. component", BASE.replace("runtime=/run/runtime-adapter", "runtime=/run/../x")],
  ["a path beyond 4,095 bytes", BASE.replace("runtime=/run/runtime-adapter", "runtime=/" + "a".repeat(4095))],
  ["a runtime with ,", BASE.replace("runtime-adapter", "a,b")],
  ["a runtime with :", BASE.replace("runtime-adapter", "a:b")],
  ["a runtime with \\", BASE.replace("runtime-adapter", "a\\b")],
  ["a runtime with =", BASE.replace("runtime-adapter", "a=b")],
  ["cgroups that are not siblings", BASE.replace("/sys/fs/cgroup/workload", "/sys/fs/other/workload")],
  ["the same cgroup twice", BASE.replace("/sys/fs/cgroup/workload", "/sys/fs/cgroup/agent")],
  [
    "cgroups whose parent is /",
    BASE.replace("/sys/fs/cgroup/agent", "/agent").replace("/sys/fs/cgroup/workload", "/w"),
  ],
];

Deno.test("the configurations the guest refuses", async (t) => {
  for (const [name, text] of REFUSED) {
    await t.step(name, () => {
      assert.throws(
        () => decodeRootConfig(enc(text)),
        (e: unknown) => e instanceof BodyError && e.body === "root-config",
      );
    });
  }
});

Deno.test("a configuration beyond 4 KiB is refused, and encode refuses what decode would", () => {
  assert.throws(() => decodeRootConfig(new Uint8Array(4097)), BodyError);
  assert.throws(() => decodeRootConfig(Uint8Array.of(...enc(BASE), 0xff, 0x3d, 0x0a)), /not UTF-8/);
  assert.throws(() => encodeRootConfig({ ...defaultRootConfig(), runtime: "/a,b" }), BodyError);
  assert.throws(() => encodeRootConfig({ ...defaultRootConfig(), mappingCount: 0 }), BodyError);
});
