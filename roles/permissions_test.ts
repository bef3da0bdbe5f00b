import assert from "node:assert/strict";
import { ISO_TOOLS } from "../runtimes/site/ramdisk_iso.ts";
import {
  ARG_GRANTS,
  argGrants,
  type Executable,
  EXECUTABLES,
  permissionsOf,
  roleFlags,
  roleTask,
} from "./permissions.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const DENO = Deno.execPath();

Deno.test("each executable's deno.json task is exactly its permission table entry", () => {
  const cfg = JSON.parse(Deno.readTextFileSync(`${ROOT}deno.json`)) as { tasks: Record<string, string> };
  for (const role of EXECUTABLES) assert.equal(cfg.tasks[role], roleTask(role), `task ${role}`);
});

Deno.test("only the root helper and bcd-vm hold --allow-all, with their reasons; every role is scoped", () => {
  for (const role of EXECUTABLES) {
    const flags = roleFlags(role);
    if (permissionsOf(role).allowAll !== undefined) {
      assert.ok(role === "helper" || role === "vm", `${role} must not hold --allow-all`);
      assert.match(permissionsOf(role).allowAll!, /\/proc/, `${role}: the reason names what needs it`);
      assert.deepEqual(flags, ["--quiet", "--no-prompt", "--allow-all"]);
      continue;
    }
    assert.ok(!flags.includes("-A") && !flags.includes("--allow-all"), role);
    assert.ok(!flags.includes("--allow-write"), `${role} has an unscoped --allow-write`);
    assert.ok(!flags.includes("--allow-ffi"), `${role} has an unscoped --allow-ffi`);
    assert.ok(!flags.includes("--allow-env"), `${role} has an unscoped --allow-env`);
  }
  assert.ok(permissionsOf("helper").allowAll);
  assert.ok(permissionsOf("vm").allowAll);
});

Deno.test("the ramdisk runs only nvidia-smi (diag.nvml), the site only its ISO build's tools (its lease ISOs)", () => {
  assert.deepEqual(roleFlags("ramdisk").filter((f) => f.startsWith("--allow-run")), ["--allow-run=nvidia-smi"]);
  assert.deepEqual(roleFlags("site").filter((f) => f.startsWith("--allow-run")), [
    `--allow-run=${ISO_TOOLS.join(",")}`,
  ]);
});

async function probe(role: Executable, action: string, target: string): Promise<string> {
  const out = await new Deno.Command(DENO, {
    args: ["run", ...roleFlags(role), `${ROOT}fixtures/permissions/probe.ts`, action, target],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return text;
}

const tmp = Deno.makeTempDirSync({ prefix: "bcd-perm-" });

type Case = { role: Executable; action: string; target: string; want: "denied" | "allowed" };

/**
 * A scoped host agent beside the helper (site, ramdisk): denied everything of root's and /tmp, /proc, /sys; allowed
 * its data dir and /etc/bcd (the controls, so a broken probe shows). Run rows name programs present here: Deno
 * resolves a program on PATH before it checks the grant, so an absent one probes "allowed (then NotFound)" whatever
 * the flags.
 */
function agentCases(role: "site" | "ramdisk", dataDir: string): Case[] {
  const denied: [string, string][] = [
    ["write", `/tmp/bcd-${role}-probe`],
    ["write", "/etc/bcd-probe"],
    ["write", "/etc/bcd/probe"],
    ["write", "/root/bcd-probe"],
    ["write", "/etc/cdi/bcd-probe.json"],
    ["write", "/sys/fs/cgroup/bcd.slice/probe"],
    ["read", "/etc/shadow"],
    ["read", "/root/.bashrc"],
    ["read", "/proc/sys/kernel/random/boot_id"],
    ["read", "/proc/meminfo"],
    ["read", "/sys/devices/system/cpu/online"],
    ["run", "sh"],
    ["run", "systemctl"],
    ["run", "reboot"],
    ["env", "HOME"],
  ];
  return [
    ...denied.map(([action, target]): Case => ({ role, action, target, want: "denied" })),
    { role, action: "write", target: `${dataDir}/probe`, want: "allowed" },
    { role, action: "read", target: "/etc/bcd/config.toml", want: "allowed" },
  ];
}

/** What each role must not be able to do, and a control each must be able to do (so a broken probe shows). */
const CASES: Case[] = [
  // The node: its data dir and the helper's socket; everything else of root's goes through the helper.
  { role: "node", action: "write", target: "/tmp/bcd-node-probe", want: "denied" },
  { role: "node", action: "write", target: "/etc/bcd-probe", want: "denied" },
  { role: "node", action: "write", target: "/etc/bcd/probe", want: "denied" },
  { role: "node", action: "write", target: "/root/bcd-probe", want: "denied" },
  { role: "node", action: "write", target: "/etc/cdi/bcd-probe.json", want: "denied" },
  { role: "node", action: "write", target: "/run/bcd/allocations/probe.env", want: "denied" },
  { role: "node", action: "write", target: "/sys/fs/cgroup/bcd.slice/probe", want: "denied" },
  { role: "node", action: "read", target: "/etc/shadow", want: "denied" },
  { role: "node", action: "read", target: "/etc/cdi/probe.json", want: "denied" },
  { role: "node", action: "read", target: "/proc/sys/kernel/random/boot_id", want: "denied" },
  { role: "node", action: "read", target: "/proc/meminfo", want: "denied" },
  { role: "node", action: "read", target: "/sys/devices/system/cpu/online", want: "denied" },
  { role: "node", action: "run", target: "sh", want: "denied" },
  { role: "node", action: "run", target: "systemctl", want: "denied" },
  { role: "node", action: "run", target: "reboot", want: "denied" },
  { role: "node", action: "env", target: "HOME", want: "denied" },
  { role: "node", action: "write", target: "/var/lib/bcd/probe", want: "allowed" },
  { role: "node", action: "run", target: "nvidia-smi", want: "allowed" },
  { role: "node", action: "run", target: "qemu-img", want: "allowed" },
  { role: "node", action: "run", target: "fallocate", want: "allowed" },
  { role: "node", action: "run", target: "virsh", want: "denied" },
  { role: "node", action: "read", target: "/etc/bcd/config.toml", want: "allowed" },
  ...agentCases("site", "/var/lib/bcd-site"),
  { role: "site", action: "write", target: "/run/bcd/probe", want: "denied" },
  { role: "site", action: "write", target: "/var/lib/bcd/probe", want: "denied" },
  { role: "site", action: "read", target: "/var/lib/bcd/identity.json", want: "denied" },
  { role: "site", action: "run", target: "genisoimage", want: "allowed" },
  { role: "site", action: "run", target: "mcopy", want: "allowed" },
  { role: "site", action: "run", target: "qemu-img", want: "denied" },
  ...agentCases("ramdisk", "/run/bcd"),
  { role: "ramdisk", action: "write", target: "/var/lib/bcd/probe", want: "denied" },
  { role: "ramdisk", action: "write", target: "/var/lib/bcd-site/probe", want: "denied" },
  { role: "ramdisk", action: "write", target: "/dev/sda", want: "denied" },
  { role: "ramdisk", action: "read", target: "/dev/sda", want: "denied" },
  { role: "ramdisk", action: "run", target: "blkdiscard", want: "denied" },
  { role: "ramdisk", action: "run", target: "qemu-img", want: "denied" },
  { role: "guest", action: "run", target: "virsh", want: "denied" },
  { role: "guest", action: "run", target: "qemu-img", want: "denied" },
  { role: "guest", action: "run", target: "nft", want: "denied" },
  { role: "guest", action: "write", target: `${tmp}/guest`, want: "denied" },
  { role: "guest", action: "write", target: "/etc/bcd-probe", want: "denied" },
  { role: "guest", action: "run", target: "true", want: "allowed" },
  { role: "sim", action: "run", target: "qemu-img", want: "denied" },
  { role: "sim", action: "write", target: "/var/lib/bcd/probe", want: "denied" },
  { role: "sim", action: "write", target: "/etc/cdi/probe", want: "denied" },
  { role: "sim", action: "write", target: "/tmp/bcd-sim-probe-sibling", want: "denied" },
  { role: "sim", action: "write", target: "/root/bcd-probe", want: "denied" },
  { role: "sim", action: "read", target: "/etc/shadow", want: "denied" },
  { role: "sim", action: "run", target: "sh", want: "denied" },
  { role: "sim", action: "env", target: "HOME", want: "denied" },
  { role: "sim", action: "read", target: "/proc/sys/kernel/random/boot_id", want: "denied" },
  { role: "guest", action: "env", target: "HOME", want: "denied" },
];

Deno.test("each role's task lacks what it must not have", async (t) => {
  for (const c of CASES) {
    await t.step(`${c.role} ${c.action} ${c.target} is ${c.want}`, async () => {
      const got = await probe(c.role, c.action, c.target);
      assert.ok(got.startsWith(c.want), `${c.role} ${c.action} ${c.target}: got "${got}"`);
    });
  }
});

Deno.test("Deno refuses /proc and /sys to scoped flags, which is why node, site and ramdisk ask the root helper for them", async (t) => {
  // If a later Deno grants these to --allow-read, this fails: then the agents could read the boot id and the
  // inventory themselves, and the helper's read ops could go.
  for (const path of ["/proc/sys/kernel/random/boot_id", "/proc/meminfo", "/sys/devices/system/cpu/online"]) {
    await t.step(path, async () => {
      const out = await new Deno.Command(DENO, {
        args: [
          "run",
          "--quiet",
          "--no-prompt",
          "--allow-read=/proc,/sys",
          `${ROOT}fixtures/permissions/probe.ts`,
          "read",
          path,
        ],
        stdout: "piped",
      }).output();
      assert.match(new TextDecoder().decode(out.stdout), /^denied/);
    });
  }
});

Deno.test("extraWrite grants exactly the directories it lists", async () => {
  // The real directories may not exist here; extraWrite proves the scoping mechanism grants exactly what it lists.
  const out = await new Deno.Command(DENO, {
    args: [
      "run",
      ...roleFlags("sim", { extraWrite: [tmp] }),
      `${ROOT}fixtures/permissions/probe.ts`,
      "write",
      `${tmp}/sim-ok`,
    ],
    stdout: "piped",
  }).output();
  assert.equal(new TextDecoder().decode(out.stdout).trim(), "allowed");
});

Deno.test("extraRun adds exactly the programs it lists to a scoped role, and nothing to an --allow-all one", () => {
  const flags = roleFlags("node", { extraRun: ["/tmp/fake-nvidia-smi"] });
  assert.ok(
    flags.includes("--allow-run=nvidia-smi,qemu-img,genisoimage,xorriso,fallocate,setfacl,/tmp/fake-nvidia-smi"),
    flags.join(" "),
  );
  assert.deepEqual(roleFlags("helper", { extraRun: ["/x"] }), ["--quiet", "--no-prompt", "--allow-all"]);
});

Deno.test("argGrants() grants exactly the paths an argument-granted subcommand names, and nothing to the rest", async (t) => {
  const rows: Array<[Executable, string[], { read: string[]; write: string[] }]> = [
    ["node", ["image", "check", "--format", "qcow2", "disk.qcow2"], { read: ["disk.qcow2"], write: [] }],
    ["node", ["image", "check", "--format=raw", "/x/disk.raw"], { read: ["/x/disk.raw"], write: [] }],
    ["node", ["image", "check", "--", "-odd.qcow2"], { read: ["-odd.qcow2"], write: [] }],
    [
      "node",
      ["image", "check-overlay", "--backing", "base.qcow2", "--backing-format", "qcow2", "ov.qcow2"],
      { read: ["ov.qcow2"], write: [] }, // the backing is compared by name, never opened
    ],
    ["node", ["image", "check-overlay", "--no-backing", "ov.qcow2"], { read: ["ov.qcow2"], write: [] }],
    ["node", ["image", "check", "--format", "qcow2"], { read: [], write: [] }],
    ["node", ["run", "--config", "/x/c.toml"], { read: [], write: [] }],
    ["node", ["journal", "inspect", "--data-dir", "/x"], { read: [], write: [] }],
    ["guest", ["bundle", "install", "--root", "/r", "--version", "v", "b.tgz"], { read: [], write: ["/r"] }],
    ["guest", ["bundle", "check", "b.tgz"], { read: [], write: [] }],
    ["sim", ["image", "check", "x"], { read: [], write: [] }],
  ];
  for (const [role, argv, want] of rows) {
    await t.step(`${role} ${argv.join(" ")}`, () => assert.deepEqual(argGrants(role, argv), want));
  }
  await t.step("a path with a comma, which a Deno flag cannot spell, is refused", () => {
    assert.throws(() => argGrants("node", ["image", "check", "--format", "qcow2", "a,b"]), TypeError);
  });
});

Deno.test("the grant table names each subcommand's value options as its CLI declares them", async () => {
  const cmds = { node: (await import("./node.ts")).COMMANDS, guest: (await import("./guest.ts")).COMMANDS };
  for (const role of ["node", "guest"] as const) {
    for (const g of ARG_GRANTS[role]) {
      const [group, sub] = g.command;
      const opts = cmds[role][group!]?.sub?.[sub!]?.options ?? {};
      const strings = Object.entries(opts).filter(([, o]) => o.type === "string").map(([k]) => k).sort();
      assert.deepEqual([...g.valueOptions].sort(), strings, `${role} ${g.command.join(" ")}`);
    }
  }
});

Deno.test("roles with argument grants run their task through the launcher, which holds only the run of deno", () => {
  for (const role of EXECUTABLES) {
    const task = roleTask(role);
    if (ARG_GRANTS[role].length === 0) assert.ok(!task.includes("launch.ts"), task);
    else {assert.equal(
        task,
        `deno run --quiet --no-prompt --allow-run=deno --allow-env=INIT_CWD roles/launch.ts ${role}`,
      );}
  }
});

Deno.test("the agent daemons run without Sparkplug: no function is queued for baseline compilation", async (t) => {
  // A hot function is queued for Sparkplug after 8 calls; V8 traces each queued function when asked to.
  const probe = await Deno.makeTempFile({ suffix: ".js" });
  try {
    await Deno.writeTextFile(
      probe,
      "function f(x) { return x * 2 + 1; }\nlet s = 0;\nfor (let i = 0; i < 2000; i++) s += f(i);\n",
    );
    const queued = async (flags: string[]) => {
      const out = await new Deno.Command(DENO, {
        args: ["run", ...flags, "--v8-flags=--trace-baseline-batch-compilation", probe],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.ok(out.success, new TextDecoder().decode(out.stderr));
      return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.startsWith("[Baseline batch")).length;
    };
    assert.ok(await queued(["--quiet"]) > 0, "without the flags V8 queues functions for Sparkplug (the probe sees it)");
    for (const role of ["node", "site", "ramdisk", "sim"] as const) {
      await t.step(role, async () => assert.equal(await queued(roleFlags(role)), 0));
    }
    assert.ok(await queued(roleFlags("guest")) > 0, "the guest agent keeps Sparkplug (not a daemon flag)");
  } finally {
    await Deno.remove(probe);
  }
});

Deno.test("the agent daemons start with room for what they keep before their first Hello: 8 MiB semi-spaces", async (t) => {
  // V8 reports the new space's room; the role's flags are what its launcher, launch.js and deno compile pass.
  const probe = await Deno.makeTempFile({ suffix: ".ts" });
  try {
    await Deno.writeTextFile(
      probe,
      'import v8 from "node:v8";\n' +
        'const s = v8.getHeapSpaceStatistics().find((x) => x.space_name === "new_space")!;\n' +
        "console.log(s.space_available_size);\n",
    );
    const room = async (flags: string[]) => {
      const out = await new Deno.Command(DENO, { args: ["run", ...flags, probe], stdout: "piped", stderr: "piped" })
        .output();
      assert.ok(out.success, new TextDecoder().decode(out.stderr));
      return Number(new TextDecoder().decode(out.stdout));
    };
    assert.ok(
      await room(["--quiet"]) < 1024 * 1024,
      "without the flags V8 starts with less than 1 MiB (the probe sees it)",
    );
    for (const role of ["node", "site", "ramdisk", "sim"] as const) {
      await t.step(role, async () => {
        const mib = (await room(roleFlags(role))) / (1024 * 1024);
        assert.ok(mib >= 7, `${role}: ${mib.toFixed(1)} MiB of new space at start`);
      });
    }
  } finally {
    await Deno.remove(probe);
  }
});
