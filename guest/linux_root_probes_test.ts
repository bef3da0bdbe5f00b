/**
 * Every probe of the seed's tables against the Linux root on real mounts: an EROFS image (mkfs.erofs) on a loop
 * device, and a GPT disk (sfdisk) whose layers are ext4 and ext2 file systems (mkfs.ext4 -d), each under an
 * overlay with a 1 MiB tmpfs upper, so that fill meets ENOSPC at once; in both overlay modes. Skips, saying why,
 * where the machine cannot mount, make loop devices, or lacks a tool.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { defaultRootConfig, type Facts, type RootConfig } from "../core/framing/mod.ts";
import { silentLogger } from "../core/log/mod.ts";
import { LinuxRoot } from "./linux_root.ts";
import { memTotal } from "./linux_probes.ts";
import { ProbeProblem, StageFailed } from "./root_errors.ts";
import { EXPECTED_MAP_FACTS, MAP_MOUNTS } from "./mapping/_expected_map_facts.ts";

async function sh(cmd: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  try {
    const o = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
    return { ok: o.success, out: new TextDecoder().decode(o.success ? o.stdout : o.stderr).trim() };
  } catch (e) {
    return { ok: false, out: String(e) };
  }
}

/** 10,000 bytes of the image's data file. */
const DATA = Uint8Array.from({ length: 10_000 }, (_, i) => (i * 7 + 1) & 0xff);
/** The first partition's 4 KiB, not UTF-8 (continuation bytes without a lead), then zero padding. */
const FIRST = Uint8Array.from({ length: 4096 }, (_, i) => 0x80 + (i % 64));
const GUID = "6c3f8a52-9b1e-4d2a-8f0e-1a2b3c4d5e6f";

async function tree(dir: string, files: Record<string, string | Uint8Array>): Promise<void> {
  for (const [p, data] of Object.entries(files)) {
    await Deno.mkdir(join(dir, p, ".."), { recursive: true });
    if (p.endsWith("/")) await Deno.mkdir(join(dir, p), { recursive: true });
    else if (typeof data === "string") await Deno.writeTextFile(join(dir, p), data);
    else await Deno.writeFile(join(dir, p), data);
  }
}

/** The file systems that this kernel neither has nor loads as a module. */
async function missingFileSystems(names: string[]): Promise<string[]> {
  const has = async (n: string) =>
    (await Deno.readTextFile("/proc/filesystems")).split("\n").some((l) => l.endsWith(`\t${n}`));
  const out: string[] = [];
  for (const n of names) {
    if (!(await has(n))) await sh("modprobe", [n]);
    if (!(await has(n))) out.push(n);
  }
  return out;
}

interface Env {
  dir: string;
  erofs: { loop: string; uuid: string };
  gpt: { loop: string; recovery: string } | string;
}

async function setup(): Promise<Env | string> {
  if (Deno.uid() !== 0) return "not root";
  const dir = await Deno.makeTempDir({ prefix: "bcd-probes-" });
  const probe = join(dir, "probe");
  await Deno.mkdir(probe);
  if (!(await sh("mount", ["-t", "tmpfs", "tmpfs", probe])).ok) return "this machine cannot mount a tmpfs";
  await sh("umount", [probe]);
  const missing = await missingFileSystems(["erofs", "overlay", "proc"]);
  if (missing.length > 0) return `this kernel lacks ${missing.join(", ")}`;
  const src = join(dir, "src");
  await tree(src, {
    "etc/os-release": 'NAME="bcd test"\nID=bcdtest\n',
    "usr/share/data.bin": DATA,
    "opt/lowerdir/file": "in a lower directory",
    "srv/": "",
  });
  // The identity is the one mkfs writes, never one read back through blkid (whose cache can be stale).
  const uuid = crypto.randomUUID();
  const mk = await sh("mkfs.erofs", [`-U${uuid}`, join(dir, "img.erofs"), src]);
  if (!mk.ok) return `mkfs.erofs is missing or failed (apt erofs-utils): ${mk.out}`;
  const lo = await sh("losetup", ["-f", "--show", "-r", join(dir, "img.erofs")]);
  if (!lo.ok) return `no loop device: ${lo.out}`;
  return { dir, erofs: { loop: lo.out, uuid }, gpt: await gptDisk(dir) };
}

/**
 * A GPT disk: the first partition's bytes; an ext4 base layer (partition 2) and an ext2 top layer (3); and the
 * same disk whose top layer has its needs_recovery bit set (debugfs).
 */
async function gptDisk(dir: string): Promise<{ loop: string; recovery: string } | string> {
  const missing = await missingFileSystems(["ext4"]);
  if (missing.length > 0) return `this kernel lacks ${missing.join(", ")}`;
  const base = join(dir, "base");
  await tree(base, {
    "etc/os-release": "ID=gptbase\n",
    "opt/lowerdir/file": "base",
    "srv/": "",
  });
  const top = join(dir, "top");
  await tree(top, { "usr/share/data.bin": DATA, "etc/hostname": "top\n" });
  const p2 = join(dir, "p2.ext4");
  const p3 = join(dir, "p3.ext2");
  let r = await sh("mkfs.ext4", ["-q", "-F", "-m", "0", "-d", base, p2, "4M"]);
  if (!r.ok) return `mkfs.ext4 is missing or failed (apt e2fsprogs): ${r.out}`;
  r = await sh("mkfs.ext2", ["-q", "-F", "-m", "0", "-d", top, p3, "1M"]);
  if (!r.ok) return `mkfs.ext2 failed: ${r.out}`;
  const loop = await writeDisk(join(dir, "disk.img"), FIRST, await Deno.readFile(p2), await Deno.readFile(p3));
  if (!loop.startsWith("/dev/")) return loop;
  r = await sh("debugfs", ["-w", "-R", "feature needs_recovery", p3]);
  if (!r.ok) return `debugfs failed: ${r.out}`;
  const recovery = await writeDisk(join(dir, "recovery.img"), FIRST, await Deno.readFile(p2), await Deno.readFile(p3));
  if (!recovery.startsWith("/dev/")) return recovery;
  return { loop, recovery };
}

/** Writes a disk of three partitions with sfdisk and attaches it read-only; returns its loop device or a problem. */
async function writeDisk(disk: string, ...parts: Uint8Array[]): Promise<string> {
  await Deno.writeFile(disk, new Uint8Array(0));
  await Deno.truncate(disk, 16384 * 512);
  const script = `label: gpt\nlabel-id: ${GUID}\nstart=2048, size=128\nstart=4096, size=8192\nstart=12288, size=2048\n`;
  const cmd = new Deno.Command("sfdisk", { args: ["-q", disk], stdin: "piped", stdout: "piped", stderr: "piped" });
  let child;
  try {
    child = cmd.spawn();
  } catch (e) {
    return `sfdisk is missing (apt fdisk): ${e}`;
  }
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode(script));
  await w.close();
  const out = await child.output();
  if (!out.success) return `sfdisk failed: ${new TextDecoder().decode(out.stderr)}`;
  {
    using f = await Deno.open(disk, { write: true });
    for (const [i, sector] of [2048, 4096, 12288].entries()) {
      await f.seek(sector * 512, Deno.SeekMode.Start);
      await f.write(parts[i]!);
    }
  }
  const lo = await sh("losetup", ["-f", "--show", "-P", "-r", disk]);
  if (!lo.ok) return `no loop device with partitions: ${lo.out}`;
  // A kernel without CONFIG_EFI_PARTITION (this machine's) does not scan the table; partx adds its partitions.
  if (!(await sh("test", ["-b", `${lo.out}p1`])).ok) await sh("partx", ["-a", lo.out]);
  for (let i = 0; i < 100 && !(await sh("test", ["-b", `${lo.out}p3`])).ok; i++) {
    await new Promise((res) => setTimeout(res, 20));
  }
  return lo.out;
}

const env = await setup();
if (typeof env === "string") console.log(`linux_root_probes_test: skipped: ${env}`);
else if (typeof env.gpt === "string") console.log(`linux_root_probes_test: GPT tests skipped: ${env.gpt}`);

globalThis.addEventListener("unload", () => {
  if (typeof env === "string") return;
  const gpt = typeof env.gpt === "string" ? [] : [env.gpt.loop, env.gpt.recovery];
  for (const lo of [env.erofs.loop, ...gpt]) new Deno.Command("losetup", { args: ["-d", lo] }).outputSync();
  Deno.removeSync(env.dir, { recursive: true });
});

let runs = 0;

/** Assembles a root, runs `fn`, tears it down (unless `fn` leaves it held), and checks that nothing is left. */
async function withRoot(
  format: "erofs" | "gpt" | "gpt-recovery",
  over: Partial<RootConfig>,
  fn: (root: LinuxRoot, config: RootConfig, e: Env) => Promise<void>,
): Promise<void> {
  const e = env as Env;
  const n = runs++;
  const gpt = e.gpt as { loop: string; recovery: string };
  const loop = format === "erofs" ? e.erofs.loop : format === "gpt" ? gpt.loop : gpt.recovery;
  const token = format === "erofs" ? `erofs:${e.erofs.uuid}` : `gpt:${GUID}`;
  const cmdline = join(e.dir, `cmdline${n}`);
  await Deno.writeTextFile(cmdline, `nvx_sandbox=1 nvx_layer=distro,0xd0003000,${token}\n`);
  const config: RootConfig = { ...defaultRootConfig(), runtime: join(e.dir, `rt${n}`), ...over };
  const root = new LinuxRoot({
    log: silentLogger(),
    cmdlinePath: cmdline,
    resolveDevice: () => Promise.resolve(loop),
    tmpfsOptions: "size=1m",
    sourcesDir: join(e.dir, `sources${n}`),
    outsideDir: join(e.dir, `outside${n}`),
    attaches: 200,
  });
  try {
    await root.assemble(config, await root.readLayout());
    await fn(root, config, e);
    await root.teardown();
  } finally {
    await root.release();
  }
  const left = await Deno.readTextFile("/proc/self/mountinfo");
  assert.ok(!left.includes(config.runtime), `nothing of ${config.runtime} stays mounted`);
}

const probe = async (root: LinuxRoot, text: string): Promise<Map<string, string>> => {
  const [name, ...args] = text.split(" ");
  return new Map(await root.probe({ name: name!, args }));
};
const facts = (root: LinuxRoot, text: string): Promise<Facts> => {
  const [name, ...args] = text.split(" ");
  return root.probe({ name: name!, args });
};

const skip = typeof env === "string";
const skipGpt = skip || typeof (env as Env).gpt === "string";

for (const mode of ["trusted-lowers", "untrusted-lowers"] as const) {
  const trusted = mode === "trusted-lowers";
  Deno.test({
    name: `EROFS over a 1 MiB tmpfs, ${mode}: mounts, contents, copy-up, rename, fill, first-partition`,
    ignore: skip,
    async fn() {
      await withRoot("erofs", { overlayMode: mode }, async (root) => {
        const m = await probe(root, "mounts");
        assert.equal(m.get("distro.count"), "1");
        assert.equal(m.get("distro.type"), "erofs");
        assert.equal(m.get("tmpfs.type"), "tmpfs");
        assert.match(m.get("tmpfs.super")!, /size=1024k/);
        assert.equal(m.get("root.type"), "overlay");
        assert.match(m.get("root.super")!, trusted ? /metacopy=on/ : /redirect_dir=nofollow/);
        const c = await probe(root, "contents");
        assert.equal(c.get("os-release.id"), "bcdtest");
        assert.equal(c.get("root.mode"), "0755");
        assert.equal(c.get("write.root"), "runtime-adapter-probe");
        assert.equal(c.get("write.upper"), "runtime-adapter-probe");
        assert.equal(c.has("write.lower"), false, "the image holds no such file: absent");
        assert.equal(c.get("lower.write"), "refused EROFS");
        assert.deepEqual(await facts(root, "copy-up usr/share/data.bin"), [
          ["lower.size", "10000"],
          ["upper.size", "10000"],
          ["upper.data", trusted ? "none" : "copied"],
          ["root.data", "intact"],
        ]);
        assert.deepEqual(await facts(root, "rename opt/lowerdir"), [["outcome", trusted ? "allowed" : "refused"]]);
        const f = await probe(root, "fill");
        assert.equal(f.get("total"), String(1024 * 1024));
        assert.ok(BigInt(f.get("available")!) <= 1024n * 1024n);
        assert.ok(BigInt(f.get("written")!) > 0n && BigInt(f.get("written")!) <= BigInt(f.get("available")!));
        assert.equal(f.get("error"), "ENOSPC");
        assert.equal(f.get("after"), "runtime-adapter-fill");
        assert.equal(f.get("memory"), String(memTotal(await Deno.readTextFile("/proc/meminfo"))));
        assert.deepEqual(await facts(root, "first-partition"), [["length", "none"], ["bytes", "none"]]);
      });
    },
  });
}

Deno.test({
  name: "EROFS root: devices, cgroups, processes, and the probes and arguments that the root refuses",
  ignore: skip,
  async fn() {
    await withRoot("erofs", {}, async (root) => {
      const d = await probe(root, "devices");
      assert.match(d.get("disks")!, /^([a-z0-9]+:\d+:(ro|rw)( |$))*$/);
      const g = await probe(root, "cgroups");
      assert.equal(g.get("agent.exists"), "false");
      assert.match(g.get("user-namespaces")!, /^(\d+|unavailable)$/);
      const p = await probe(root, "processes");
      assert.equal(p.get("pid1.pid"), "1");
      assert.equal(p.get("worker.pid"), String(Deno.pid));
      // Where PID 1's namespace links cannot be read (a container whose PID 1 this process may not inspect), the
      // fact says so; it never calls unknown namespaces the same, nor different.
      const pid1Readable = await Deno.readLink("/proc/1/ns/mnt").then(() => true, (e) => {
        if (e instanceof Deno.errors.PermissionDenied) return false;
        throw e;
      });
      assert.match(
        p.get("worker.namespaces")!,
        pid1Readable ? /^(same|[a-z_]+( [a-z_]+)*)$/ : /^unreadable: PermissionDenied/,
        "same, the ones that differ, or unreadable",
      );
      assert.ok(p.get("worker.command")!.length > 0);
      for (
        const [text, problem] of [
          ["copy-up usr/share/missing", /FILE usr\/share\/missing is no regular file of the layers/],
          ["copy-up usr/share", /FILE usr\/share is no regular file of the layers/],
          ["copy-up /usr/share/data.bin", /not a relative path of normal components/],
          ["copy-up usr/../etc/os-release", /not a relative path of normal components/],
          ["copy-up", /copy-up takes one argument, FILE/],
          ["rename usr/share/data.bin", /DIRECTORY usr\/share\/data.bin is no directory of the layers/],
          ["rename ./opt", /not a relative path of normal components/],
          ["fill now", /fill takes no arguments/],
          ["map-checks x", /map-checks takes no arguments/],
          // A root without the entries helper (bcd-guest entries) says so; the worker's has one (test:vm-layered).
          ["entries", /^entries: this worker has no helper to run$/],
          ["entries now", /entries takes no arguments/],
        ] as const
      ) {
        await assert.rejects(facts(root, text), (e: unknown) => e instanceof ProbeProblem && problem.test(e.message));
      }
    });
  },
});

Deno.test({
  name: "mappings beneath the EROFS root: map, map-checks, then map-refused latches the root; a clean teardown",
  ignore: skip,
  async fn() {
    await withRoot("erofs", {}, async (root, config, e) => {
      const n = runs - 1;
      const map = await probe(root, "map");
      assert.deepEqual([...map], EXPECTED_MAP_FACTS);
      const checks = await probe(root, "map-checks");
      for (const [k, v] of checks) {
        if (/^(link|magic)\./.test(k)) assert.equal(v, "link", k);
        if (k.startsWith("reserved.") && k !== "reserved.created") assert.match(v, /^reserved \//, k);
      }
      assert.deepEqual(
        [...checks].filter(([k]) => !/^(link|magic|reserved)\./.test(k) || k === "reserved.created"),
        [
          ["kind.directory", "target-kind /srv/checks/kind-file"],
          ["kind.file", "target-kind /srv/checks/kind-dir"],
          ["nested.onto", "applied"],
          ["nested.create", "nested /srv/checks/nested/new"],
          ["nested.source", "false"],
          ["nested.teardown", "complete"],
          ["reserved.created", "none"],
          ["read-only.attaches", "200"],
          ["read-only.flags", "ro,nosuid,nodev,relatime"],
          ["read-only.writable", "false"],
          ["read-only.source", "intact"],
          ["outside.entries", "none"],
          ["outside.mounts", "none"],
          ["left", "none"],
        ],
      );
      assert.equal([...checks].filter(([k]) => /^(link|magic|reserved)\./.test(k)).length, 4 + 5 + 15);
      assert.deepEqual(await facts(root, "map-refused"), [
        ["through-link", "link"],
        ["latched", "true"],
        ["later", "latched"],
        ["later.target", "false"],
        ["mounts", MAP_MOUNTS],
        ["outside", "none"],
      ]);
      assert.equal(await Deno.readTextFile(join(e.dir, `sources${n}`, "file.txt")), "runtime-adapter-file");
      assert.ok(config.runtime.length > 0);
    });
  },
});

Deno.test({
  name: "a GPT disk of ext4 layers: first partition without padding, layers ro,nosuid,nodev,norecovery, probes",
  ignore: skipGpt,
  async fn() {
    for (const mode of ["trusted-lowers", "untrusted-lowers"] as const) {
      await withRoot("gpt", { overlayMode: mode }, async (root) => {
        const hex = [...FIRST].map((b) => b.toString(16).padStart(2, "0")).join("");
        assert.deepEqual(await facts(root, "first-partition"), [["length", "4096"], ["bytes", hex]]);
        const m = await probe(root, "mounts");
        for (const p of ["p2", "p3"]) {
          assert.equal(m.get(`${p}.count`), "1");
          assert.equal(m.get(`${p}.type`), "ext4");
          assert.match(m.get(`${p}.options`)!, /^ro,nosuid,nodev/);
          assert.match(m.get(`${p}.super`)!, /norecovery/);
        }
        assert.match(m.get("root.super")!, /lowerdir=[^,]*\/p3:[^,]*\/p2,/);
        const c = await probe(root, "contents");
        assert.equal(c.get("os-release.id"), "gptbase");
        assert.equal(c.get("lower.write"), "refused EROFS");
        const up = await probe(root, "copy-up usr/share/data.bin");
        assert.equal(up.get("upper.data"), mode === "trusted-lowers" ? "none" : "copied");
        assert.equal(up.get("root.data"), "intact");
        assert.deepEqual(await facts(root, "rename opt/lowerdir"), [[
          "outcome",
          mode === "trusted-lowers" ? "allowed" : "refused",
        ]]);
      });
    }
  },
});

Deno.test({
  name: "a GPT disk whose first partition is one byte over its bound fails the assembly; one that meets it exactly",
  ignore: skipGpt,
  async fn() {
    await withRoot("gpt", { firstPartitionBound: 65536n }, async (root) => {
      assert.equal((await probe(root, "first-partition")).get("length"), "4096");
    });
    await assert.rejects(
      withRoot("gpt", { firstPartitionBound: 65535n }, () => Promise.resolve()),
      (e: unknown) => e instanceof StageFailed && e.stage === "assembly" && /beyond its bound of 65535/.test(e.message),
    );
  },
});

Deno.test({
  name: "a GPT disk whose top layer needs recovery fails the assembly before anything of it is mounted",
  ignore: skipGpt,
  async fn() {
    const e = env as Env;
    const cmdline = join(e.dir, "cmdline-recovery");
    await Deno.writeTextFile(cmdline, `nvx_sandbox=1 nvx_layer=distro,0xd0003000,gpt:${GUID}\n`);
    const config: RootConfig = { ...defaultRootConfig(), runtime: join(e.dir, "rt-recovery") };
    const root = new LinuxRoot({
      log: silentLogger(),
      cmdlinePath: cmdline,
      resolveDevice: () => Promise.resolve((e.gpt as { recovery: string }).recovery),
    });
    try {
      await assert.rejects(
        root.assemble(config, await root.readLayout()),
        (err: unknown) =>
          err instanceof StageFailed && err.stage === "assembly" && /partition 3 needs recovery/.test(err.message),
      );
      const table = await Deno.readTextFile("/proc/self/mountinfo");
      assert.equal(table.includes(config.runtime), false, "no layer was mounted");
    } finally {
      await root.release();
    }
  },
});
