/**
 * Every probe of the seed's tables against the fake root, with its facts exactly as the seed spells them, and
 * every refusal of a probe's name or arguments; the same checks ({@link checkProbe}) guard the Linux root.
 */
import assert from "node:assert/strict";
import { defaultRootConfig, type Facts, type RootConfig } from "../core/framing/mod.ts";
import { ENTRIES_NEED_LINUX, FAKE_FIRST_PARTITION, FakeRoot, type FakeRootOptions } from "./fake_root.ts";
import { PROBES } from "./probe_table.ts";
import { EXPECTED_MAP_FACTS } from "./mapping/_expected_map_facts.ts";
import { ProbeProblem, StageFailed } from "./root_errors.ts";

const EROFS_RAM = "nvx_sandbox=1 nvx_layer=distro,0xd0003000,erofs:abcd";
const GPT_SCRATCH = "nvx_sandbox=1 nvx_layer=distro,0xd0003000,gpt:abcd nvx_scratch=0xd0006000,ext4";
const MIB = 1024 * 1024;

async function ready(opts: FakeRootOptions = {}, over: Partial<RootConfig> = {}): Promise<FakeRoot> {
  const root = new FakeRoot(opts);
  const config = { ...defaultRootConfig(), ...over };
  const layout = await root.readLayout();
  await root.bootstrap(config);
  await root.assemble(config, layout);
  return root;
}

const run = (root: FakeRoot, text: string): Promise<Facts> => {
  const [name, ...args] = text.split(" ");
  return root.probe({ name: name!, args });
};

const FIRST_HEX = [...FAKE_FIRST_PARTITION.subarray(0, 4096)].map((b) => b.toString(16).padStart(2, "0")).join("");

/** One row per probe (and per mode where the mode changes the facts). */
const ROWS: ReadonlyArray<{
  probe: string;
  opts?: FakeRootOptions;
  config?: Partial<RootConfig>;
  facts: Facts;
}> = [
  {
    probe: "mounts",
    opts: { cmdline: EROFS_RAM },
    facts: [
      ["distro.count", "1"],
      ["distro.type", "erofs"],
      ["distro.source", "/dev/vda"],
      ["distro.options", "ro,relatime"],
      ["distro.super", "ro"],
      ["tmpfs.count", "1"],
      ["tmpfs.type", "tmpfs"],
      ["tmpfs.source", "tmpfs"],
      ["tmpfs.options", "rw,relatime"],
      ["tmpfs.super", "rw,mode=755"],
      ["root.count", "1"],
      ["root.type", "overlay"],
      ["root.source", "overlay"],
      ["root.options", "rw,relatime"],
      [
        "root.super",
        "rw,lowerdir=/run/runtime-adapter/distro,upperdir=/run/runtime-adapter/tmpfs/upper," +
        "workdir=/run/runtime-adapter/tmpfs/work,redirect_dir=on,metacopy=on",
      ],
    ],
  },
  {
    probe: "mounts",
    opts: { cmdline: GPT_SCRATCH },
    config: { overlayMode: "untrusted-lowers" },
    facts: [
      ["p2.count", "1"],
      ["p2.type", "ext4"],
      ["p2.source", "/dev/vda2"],
      ["p2.options", "ro,nosuid,nodev,relatime"],
      ["p2.super", "ro,norecovery,errors=remount-ro"],
      ["p3.count", "1"],
      ["p3.type", "ext4"],
      ["p3.source", "/dev/vda3"],
      ["p3.options", "ro,nosuid,nodev,relatime"],
      ["p3.super", "ro,norecovery,errors=remount-ro"],
      ["scratch.count", "1"],
      ["scratch.type", "ext4"],
      ["scratch.source", "/dev/vdb"],
      ["scratch.options", "rw,relatime"],
      ["scratch.super", "rw"],
      ["root.count", "1"],
      ["root.type", "overlay"],
      ["root.source", "overlay"],
      ["root.options", "rw,relatime"],
      [
        "root.super",
        "rw,lowerdir=/run/runtime-adapter/p3:/run/runtime-adapter/p2,upperdir=/run/runtime-adapter/scratch/upper," +
        "workdir=/run/runtime-adapter/scratch/work,redirect_dir=nofollow,metacopy=off",
      ],
    ],
  },
  {
    probe: "contents",
    facts: [
      ["os-release.id", "ubuntu"],
      ["root.mode", "0755"],
      ["write.root", "runtime-adapter-probe"],
      ["write.upper", "runtime-adapter-probe"],
      ["lower.write", "refused EROFS"],
    ],
  },
  {
    probe: "copy-up usr/share/data.bin",
    facts: [["lower.size", "10000"], ["upper.size", "10000"], ["upper.data", "none"], ["root.data", "intact"]],
  },
  {
    probe: "copy-up usr/share/data.bin",
    config: { overlayMode: "untrusted-lowers" },
    facts: [["lower.size", "10000"], ["upper.size", "10000"], ["upper.data", "copied"], ["root.data", "intact"]],
  },
  { probe: "rename opt/lowerdir", facts: [["outcome", "allowed"]] },
  { probe: "rename opt/lowerdir", config: { overlayMode: "untrusted-lowers" }, facts: [["outcome", "refused"]] },
  {
    probe: "fill",
    facts: [
      ["total", String(64 * MIB)],
      ["available", String(64 * MIB)],
      ["written", String(64 * MIB)],
      ["error", "ENOSPC"],
      ["after", "runtime-adapter-fill"],
      ["memory", String(2048 * MIB)],
    ],
  },
  {
    probe: "fill",
    opts: { cmdline: EROFS_RAM, memoryBytes: 512 * MIB },
    facts: [
      ["total", String(256 * MIB)],
      ["available", String(256 * MIB)],
      ["written", String(256 * MIB)],
      ["error", "ENOSPC"],
      ["after", "runtime-adapter-fill"],
      ["memory", String(512 * MIB)],
    ],
  },
  {
    probe: "devices",
    config: { distroSectors: 8192n, scratchSectors: 4096n },
    facts: [["disks", "vda:8192:ro vdb:4096:rw"]],
  },
  { probe: "first-partition", facts: [["length", "none"], ["bytes", "none"]] },
  { probe: "first-partition", opts: { cmdline: GPT_SCRATCH }, facts: [["length", "4096"], ["bytes", FIRST_HEX]] },
  {
    probe: "cgroups",
    facts: [
      ["parent.type", "cgroup2"],
      ["parent.subtree-control", "memory pids"],
      ["agent.exists", "true"],
      ["workload.exists", "true"],
      ["agent.memory.low", String(16 * MIB)],
      ["workload.memory.max", String(128 * MIB)],
      ["workload.pids.max", "128"],
      ["agent.processes", "2"],
      ["workload.processes", "0"],
      ["user-namespaces", "unavailable"],
    ],
  },
  { probe: "hold", facts: [["held", "/run/runtime-adapter/root"]] },
  { probe: "map", facts: EXPECTED_MAP_FACTS },
  {
    probe: "map-refused",
    facts: [
      ["through-link", "link"],
      ["latched", "true"],
      ["later", "latched"],
      ["later.target", "false"],
      ["mounts", "none"],
      ["outside", "none"],
    ],
  },
  {
    probe: "map-checks",
    opts: { attaches: 20 },
    facts: [
      ["link.a", "link"],
      ["link.b", "link"],
      ["link.new", "link"],
      ["link.up", "link"],
      ["magic.self", "link"],
      ["magic.thread-self", "link"],
      ["magic.root", "link"],
      ["magic.cwd", "link"],
      ["magic.fd", "link"],
      ["kind.directory", "target-kind /srv/checks/kind-file"],
      ["kind.file", "target-kind /srv/checks/kind-dir"],
      ["nested.onto", "applied"],
      ["nested.create", "nested /srv/checks/nested/new"],
      ["nested.source", "false"],
      ["nested.teardown", "complete"],
      ["reserved.run", "reserved /run"],
      ["reserved.run-nvx", "reserved /run/nvx"],
      ["reserved.time", "reserved /run/nvx/time"],
      ["reserved.time-below", "reserved /run/nvx/time/below"],
      ["reserved.proc", "reserved /proc"],
      ["reserved.sys", "reserved /sys"],
      ["reserved.dev", "reserved /dev"],
      ["reserved.agent", "reserved /.runtime-adapter-guest"],
      ["reserved.machine-id", "reserved /etc/machine-id"],
      ["reserved.etc", "reserved /etc"],
      ["reserved.adapter-tree", "reserved /srv/adapter/inside"],
      ["reserved.adapter-ancestor", "reserved /srv"],
      ["reserved.adapter-path", "reserved /srv/checks/exact"],
      ["reserved.adapter-below", "reserved /srv/checks/exact/below"],
      ["reserved.created", "none"],
      ["read-only.attaches", "20"],
      ["read-only.flags", "ro,nosuid,nodev,relatime"],
      ["read-only.writable", "false"],
      ["read-only.source", "intact"],
      ["outside.entries", "none"],
      ["outside.mounts", "none"],
      ["left", "none"],
    ],
  },
];

Deno.test("each probe of the seed's tables finds its facts on the fake root, spelled as the seed spells them", async (t) => {
  for (const row of ROWS) {
    const label = `${row.probe} ${row.opts?.cmdline ?? ""} ${row.config?.overlayMode ?? ""}`;
    await t.step(label, async () => {
      const root = await ready(row.opts, row.config);
      assert.deepEqual(await run(root, row.probe), row.facts);
    });
  }
  const covered = new Set(ROWS.map((r) => r.probe.split(" ")[0]!));
  // processes: below; orphan and zombies are about the guest's PID 1, proven in a real VM (test:vm-layered).
  // entries enters the root through Linux namespaces: guest/entries_test.ts and test:vm-layered.
  const apart = ["processes", "orphan", "zombies", "entries"];
  assert.deepEqual([...covered].sort(), Object.keys(PROBES).filter((p) => !apart.includes(p)).sort());
});

Deno.test("processes: PID 1, the worker, and PID 1's unrelated child, each with its records", async () => {
  const facts = new Map(await run(await ready(), "processes"));
  for (const name of ["pid1", "worker", "sibling"]) {
    for (const k of ["pid", "state", "ppid", "root", "cgroup", "command", "namespaces"]) {
      assert.ok(facts.has(`${name}.${k}`), `${name}.${k}`);
    }
  }
  assert.equal(facts.get("pid1.pid"), "1");
  assert.equal(facts.get("worker.ppid"), "1");
  assert.equal(facts.get("sibling.namespaces"), "same");
});

/** Each refusal: the probe's text and the problem. */
const REFUSALS: ReadonlyArray<readonly [string, string]> = [
  ["entries", ENTRIES_NEED_LINUX],
  ["echo", "unknown probe echo"],
  ["copy-up", "copy-up takes one argument, FILE"],
  ["copy-up a b", "copy-up takes one argument, FILE"],
  ["copy-up /usr/share/data.bin", "FILE /usr/share/data.bin is not a relative path of normal components"],
  ["copy-up usr/../etc/os-release", "FILE usr/../etc/os-release is not a relative path of normal components"],
  ["copy-up ./etc/os-release", "FILE ./etc/os-release is not a relative path of normal components"],
  ["copy-up etc//os-release", "FILE etc//os-release is not a relative path of normal components"],
  ["copy-up etc/os-release/", "FILE etc/os-release/ is not a relative path of normal components"],
  ["copy-up etc/missing", "FILE etc/missing is no regular file of the layers"],
  ["copy-up opt/lowerdir", "FILE opt/lowerdir is no regular file of the layers"],
  ["rename", "rename takes one argument, DIRECTORY"],
  ["rename ..", "DIRECTORY .. is not a relative path of normal components"],
  ["rename etc/os-release", "DIRECTORY etc/os-release is no directory of the layers"],
  ["rename nowhere", "DIRECTORY nowhere is no directory of the layers"],
  ...Object.entries(PROBES).filter(([, a]) => a === "none").map(([n]) =>
    [`${n} x`, `${n} takes no arguments`] as const
  ),
];

Deno.test("the probes and arguments that the roots refuse, each with its problem", async (t) => {
  const root = await ready();
  for (const [text, problem] of REFUSALS) {
    await t.step(text, async () => {
      await assert.rejects(run(root, text), (e: unknown) => e instanceof ProbeProblem && e.message === problem);
    });
  }
  assert.equal(root.mapped.length, 0);
});

Deno.test("the assembly refuses a first partition one byte over its bound, and takes one that meets it", async () => {
  await ready({ cmdline: GPT_SCRATCH }, { firstPartitionBound: 65536n });
  await assert.rejects(
    ready({ cmdline: GPT_SCRATCH }, { firstPartitionBound: 65535n }),
    (e: unknown) => e instanceof StageFailed && e.stage === "assembly" && /beyond its bound of 65535/.test(e.message),
  );
});

Deno.test("a root that the hold probe holds fails its teardown", async () => {
  const root = await ready();
  await run(root, "hold");
  await assert.rejects(root.teardown(), (e: unknown) => e instanceof StageFailed && e.stage === "teardown");
});

Deno.test("map-refused latches the root: the host's later mappings are refused too", async () => {
  const root = await ready();
  await run(root, "map-refused");
  const m = { readOnly: false, source: new TextEncoder().encode("a"), target: new TextEncoder().encode("/srv/a") };
  await assert.rejects(root.applyMapping(m), /latched/);
});

Deno.test("fill counts what the upper already holds: available and written shrink by it", async () => {
  const root = await ready({ upperBytes: MIB });
  await run(root, "contents");
  const f = new Map(await run(root, "fill"));
  assert.equal(f.get("total"), String(MIB));
  assert.equal(f.get("available"), String(MIB - "runtime-adapter-probe".length));
});
