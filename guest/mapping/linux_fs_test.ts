/**
 * The Linux file system of the mapper against real mounts: its read-only attach is never writable, which a
 * naive bind-then-remount is, as the writer thread of the race finds (the check fails first on the naive one).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { FsError } from "./fs_ops.ts";
import { LinuxFs } from "./linux_fs.ts";

async function canMount(): Promise<string | null> {
  if (Deno.uid() !== 0) return "not root";
  const dir = await Deno.makeTempDir({ prefix: "bcd-linuxfs-probe-" });
  try {
    const o = await new Deno.Command("mount", { args: ["-t", "tmpfs", "tmpfs", dir], stderr: "piped" }).output();
    if (!o.success) return "this machine cannot mount a tmpfs";
    await new Deno.Command("umount", { args: [dir] }).output();
    return null;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const why = await canMount();
if (why !== null) console.log(`linux_fs_test: skipped: ${why}`);

/** Binds, then remounts read-only: the window util-linux 2.38's `mount --bind -o ro` leaves. */
class NaiveFs extends LinuxFs {
  override async attach(source: string, target: string, readOnly: boolean): Promise<void> {
    await retry(["--bind", source, target], 0);
    // A writer that holds the writable mount open makes the remount busy: retry, as a naive mapper would have to.
    await retry(["-o", `remount,bind,${readOnly ? "ro," : ""}nosuid,nodev`, target], 100);
  }

  /** The writer may hold the writable mount open for an instant, which makes its unmount busy. */
  override async detach(target: string): Promise<void> {
    for (let i = 0;; i++) {
      try {
        return await super.detach(target);
      } catch (e) {
        if (i > 100) throw e;
        await new Promise((r) => setTimeout(r, 1));
      }
    }
  }
}

async function retry(args: string[], times: number): Promise<void> {
  for (let i = 0;; i++) {
    const o = await new Deno.Command("mount", { args, stderr: "piped" }).output();
    if (o.success) return;
    if (i >= times) throw new Error(new TextDecoder().decode(o.stderr));
    await new Promise((r) => setTimeout(r, 1));
  }
}

async function race(fs: LinuxFs, dir: string, rounds: number) {
  const source = join(dir, "source.txt");
  const target = join(dir, "target.txt");
  await Deno.writeTextFile(source, "source");
  await Deno.writeTextFile(target, "");
  const writer = await fs.startWriter(target, source);
  let result: Awaited<ReturnType<typeof writer.stop>>;
  try {
    for (let i = 0; i < rounds; i++) {
      await fs.attach(source, target, true);
      await detachRacing(fs, target);
    }
  } finally {
    result = await writer.stop();
    await fs.close();
  }
  return { ...result, source: await Deno.readTextFile(source) };
}

/**
 * An unmount that lands in the instant the writer thread holds the target open is EBUSY (the kernel's answer, not a
 * fault of the attach under test): try again while the writer keeps going, a bounded number of times.
 */
async function detachRacing(fs: LinuxFs, target: string): Promise<void> {
  for (let attempt = 1;; attempt++) {
    try {
      return await fs.detach(target);
    } catch (e) {
      if (!(e instanceof FsError) || e.code !== "EBUSY" || attempt >= 500) throw e;
      await new Promise((r) => setTimeout(r, 2));
    }
  }
}

/** Lazily unmounts whatever a failed test left mounted under `dir` (deepest first), so removing it cannot fail EBUSY
 * and hide the test's own failure, and no mount outlives the test. */
async function unmountUnder(dir: string): Promise<void> {
  const points = (await Deno.readTextFile("/proc/self/mountinfo")).split("\n")
    .map((l) => l.split(" ")[4] ?? "").filter((p) => p === dir || p.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const p of points) await new Deno.Command("umount", { args: ["-l", p], stderr: "null" }).output();
}

Deno.test({
  name: "a read-only attach is never writable, while a naive bind-then-remount is",
  ignore: why !== null,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "bcd-linuxfs-" });
    try {
      const staged = await race(new LinuxFs({ staging: join(dir, "staging") }), dir, 100);
      assert.ok(staged.attempts > 100, `the writer ran (${staged.attempts} opens)`);
      assert.equal(staged.writable, 0);
      assert.equal(staged.source, "source");
      const naive = await race(new NaiveFs({ staging: join(dir, "staging2") }), dir, 100);
      assert.ok(naive.writable > 0, `the naive attach was writable (${naive.writable} of ${naive.attempts} opens)`);
      assert.equal(
        await Deno.readTextFile(join(dir, "/proc/self/mountinfo").slice(dir.length)).then((t) => t.includes(dir)),
        false,
      );
    } finally {
      await unmountUnder(dir);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "the Linux mapper's file system: kinds, mounts with nosuid and nodev, a procfs whose magic links are links",
  ignore: why !== null,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "bcd-linuxfs-" });
    const fs = new LinuxFs({ staging: join(dir, "staging") });
    try {
      await fs.mkdir(join(dir, "d"));
      await fs.mkdir(join(dir, "t"));
      await fs.mkdir(join(dir, "proc"));
      await fs.createFile(join(dir, "f"));
      await fs.symlink("/", join(dir, "l"));
      assert.deepEqual(
        await Promise.all(["d", "f", "l", "none"].map((n) => fs.lstat(join(dir, n)))),
        ["directory", "file", "link", null],
      );
      await fs.attach(join(dir, "d"), join(dir, "t"), false);
      const row = (await fs.mounts()).findLast((r) => r.point === join(dir, "t"));
      assert.match(row!.options, /^rw,nosuid,nodev/);
      await fs.mountProc(join(dir, "proc"));
      assert.equal(await fs.lstat(join(dir, "proc/self")), "link");
      assert.equal(await fs.lstat(join(dir, `proc/${Deno.pid}/root`)), "link");
      await fs.detach(join(dir, "proc"));
      await fs.detach(join(dir, "t"));
      await fs.close();
      assert.equal((await Deno.readTextFile("/proc/self/mountinfo")).includes(dir), false);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("a writer thread that Deno's permissions keep from writing fails the race instead of finding it safe", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-linuxfs-perm-" });
  try {
    await Deno.writeTextFile(join(dir, "f"), "x");
    const url = new URL("./linux_fs.ts", import.meta.url).href;
    const code = `const { LinuxFs } = await import(${JSON.stringify(url)});
      const w = await new LinuxFs({ staging: "/nowhere" }).startWriter(${JSON.stringify(join(dir, "f"))}, ${
      JSON.stringify(join(dir, "f"))
    });
      await new Promise((r) => setTimeout(r, 50));
      try { await w.stop(); console.log("safe"); } catch (e) { console.log(e.code); }`;
    await Deno.writeTextFile(join(dir, "main.ts"), code);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-prompt", "--allow-read", join(dir, "main.ts")],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout).trim();
    assert.equal(text, "EACCES", new TextDecoder().decode(out.stderr));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
