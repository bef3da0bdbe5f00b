/**
 * The Linux root against real mounts: an EROFS image (made by mkfs.erofs) on a loop device under an overlay with
 * a tmpfs upper. Skips, saying why, where the machine cannot mount, make loop devices, or lacks mkfs.erofs.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { defaultRootConfig, type RootConfig } from "../core/framing/mod.ts";
import { silentLogger } from "../core/log/mod.ts";
import { LinuxRoot } from "./linux_root.ts";
import { checkLayout } from "./root_layout.ts";
import { StageFailed } from "./root_errors.ts";

async function sh(cmd: string, args: string[]): Promise<{ ok: boolean; out: string }> {
  try {
    const o = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
    return { ok: o.success, out: new TextDecoder().decode(o.success ? o.stdout : o.stderr).trim() };
  } catch (e) {
    return { ok: false, out: String(e) };
  }
}

async function setup(): Promise<{ dir: string; loop: string; uuid: string } | string> {
  if (Deno.uid() !== 0) return "not root";
  const dir = await Deno.makeTempDir({ prefix: "bcd-linux-root-" });
  const probe = join(dir, "probe");
  await Deno.mkdir(probe);
  if (!(await sh("mount", ["-t", "tmpfs", "tmpfs", probe])).ok) return "this machine cannot mount a tmpfs";
  await sh("umount", [probe]);
  const src = join(dir, "src");
  await Deno.mkdir(join(src, "etc"), { recursive: true });
  await Deno.writeTextFile(join(src, "etc/os-release"), 'NAME="bcd test"\nID=bcdtest\n');
  await Deno.writeTextFile(join(src, "etc/hostname"), "image\n");
  // The identity is the one mkfs writes, never one read back through blkid (whose cache can be stale).
  const uuid = crypto.randomUUID();
  const mk = await sh("mkfs.erofs", [`-U${uuid}`, join(dir, "img.erofs"), src]);
  if (!mk.ok) return `mkfs.erofs is missing or failed (apt erofs-utils): ${mk.out}`;
  const lo = await sh("losetup", ["-f", "--show", "-r", join(dir, "img.erofs")]);
  if (!lo.ok) return `no loop device: ${lo.out}`;
  return { dir, loop: lo.out, uuid };
}

const env = await setup();
if (typeof env === "string") console.log(`linux_root_test: skipped: ${env}`);

Deno.test({
  name: "the Linux root: EROFS on a loop device under an overlay on tmpfs; probes; a held root's teardown fails",
  ignore: typeof env === "string",
  async fn() {
    const { dir, loop, uuid } = env as Exclude<typeof env, string>;
    const cmdline = join(dir, "cmdline");
    await Deno.writeTextFile(cmdline, `console=hvc0 nvx_sandbox=1 nvx_layer=distro,0xd0003000,erofs:${uuid}\n`);
    const config: RootConfig = { ...defaultRootConfig(), runtime: join(dir, "rt") };
    const root = new LinuxRoot({
      log: silentLogger(),
      cmdlinePath: cmdline,
      resolveDevice: () => Promise.resolve(loop),
    });
    try {
      const layout = await root.readLayout();
      assert.deepEqual(layout.upper, { kind: "ram" });
      checkLayout(config, layout);
      await root.assemble(config, layout);
      const mounts = new Map(await root.probe({ name: "mounts", args: [] }));
      assert.equal(mounts.get("distro.type"), "erofs");
      assert.equal(mounts.get("distro.count"), "1");
      assert.equal(mounts.get("tmpfs.type"), "tmpfs");
      assert.equal(mounts.get("root.type"), "overlay");
      assert.match(mounts.get("root.super") ?? "", /lowerdir=/);
      const contents = new Map(await root.probe({ name: "contents", args: [] }));
      assert.equal(contents.get("os-release.id"), "bcdtest");
      await Deno.writeTextFile(join(config.runtime, "root/etc/new"), "upper");
      assert.equal(await Deno.readTextFile(join(config.runtime, "tmpfs/upper/etc/new")), "upper");
      await root.probe({ name: "hold", args: [] });
      await assert.rejects(root.teardown(), (e: unknown) => e instanceof StageFailed && e.stage === "teardown");
    } finally {
      await root.release();
      await sh("losetup", ["-d", loop]);
    }
    const left = await Deno.readTextFile("/proc/self/mountinfo");
    assert.ok(!left.includes(join(dir, "rt")), "release unmounted the root");
  },
});

Deno.test({
  name: "the identity check probes the device: a reused loop device whose blkid cache entry is stale still matches",
  ignore: typeof env === "string",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "bcd-linux-root-reuse-" });
    const src = join(dir, "src");
    await Deno.mkdir(join(src, "etc"), { recursive: true });
    await Deno.writeTextFile(join(src, "etc/os-release"), "ID=reused\n");
    const [was, now] = [crypto.randomUUID(), crypto.randomUUID()];
    for (const [uuid, img] of [[was, "was.erofs"], [now, "now.erofs"]] as const) {
      const mk = await sh("mkfs.erofs", [`-U${uuid}`, join(dir, img), src]);
      assert.ok(mk.ok, mk.out);
    }
    const lo = await sh("losetup", ["-f", "--show", "-r", join(dir, "was.erofs")]);
    assert.ok(lo.ok, lo.out);
    // blkid's cache in a file of this test (libblkid's BLKID_FILE), for blkid here and in the root alike: the stale
    // entry is made here, whatever /run/blkid holds on this machine.
    const cacheBefore = Deno.env.get("BLKID_FILE");
    Deno.env.set("BLKID_FILE", join(dir, "blkid.tab"));
    const root = new LinuxRoot({
      log: silentLogger(),
      cmdlinePath: join(dir, "cmdline"),
      resolveDevice: () => Promise.resolve(lo.out),
    });
    try {
      // blkid (without -p) caches the device's UUID; then the device shows another image.
      assert.equal((await sh("blkid", ["-o", "value", "-s", "UUID", lo.out])).out, was);
      await Deno.writeFile(join(dir, "was.erofs"), await Deno.readFile(join(dir, "now.erofs")));
      assert.ok((await sh("blockdev", ["--flushbufs", lo.out])).ok);
      assert.equal(
        (await sh("blkid", ["-o", "value", "-s", "UUID", lo.out])).out,
        was,
        "precondition: the blkid cache still names the old image (what the identity check must not trust)",
      );
      await Deno.writeTextFile(join(dir, "cmdline"), `nvx_sandbox=1 nvx_layer=distro,0xd0003000,erofs:${now}\n`);
      const config = { ...defaultRootConfig(), runtime: join(dir, "rt") };
      await root.assemble(config, await root.readLayout());
      const contents = new Map(await root.probe({ name: "contents", args: [] }));
      assert.equal(contents.get("os-release.id"), "reused");
    } finally {
      if (cacheBefore === undefined) Deno.env.delete("BLKID_FILE");
      else Deno.env.set("BLKID_FILE", cacheBefore);
      await root.release();
      await sh("losetup", ["-d", lo.out]);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "the Linux root refuses an image of another identity at the assembly stage",
  ignore: typeof env === "string",
  async fn() {
    const { dir } = env as Exclude<typeof env, string>;
    const lo = await sh("losetup", ["-f", "--show", "-r", join(dir, "img.erofs")]);
    const cmdline = join(dir, "cmdline2");
    await Deno.writeTextFile(cmdline, "nvx_sandbox=1 nvx_layer=distro,0xd0003000,erofs:not-the-uuid\n");
    const root = new LinuxRoot({
      log: silentLogger(),
      cmdlinePath: cmdline,
      resolveDevice: () => Promise.resolve(lo.out),
    });
    try {
      const config = { ...defaultRootConfig(), runtime: join(dir, "rt2") };
      await assert.rejects(
        root.assemble(config, await root.readLayout()),
        (e: unknown) => e instanceof StageFailed && e.stage === "assembly" && /identity/.test(e.message),
      );
    } finally {
      await root.release();
      await sh("losetup", ["-d", lo.out]);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("the Linux root's bootstrap fails at its stage without a cgroup2 parent", async () => {
  const root = new LinuxRoot({ log: silentLogger() });
  const dir = await Deno.makeTempDir();
  const config = { ...defaultRootConfig(), agentCgroup: `${dir}/g/agent`, workloadCgroup: `${dir}/g/workload` };
  await assert.rejects(root.bootstrap(config), (e: unknown) => e instanceof StageFailed && e.stage === "bootstrap");
  await Deno.remove(dir, { recursive: true });
});
