/**
 * Root's `kexec.load`/`kexec.exec` through a ramdisk helper's socket, on a real loop disk whose two ext4 partitions
 * (made by the real mkfs.ext4 -d) hold a kernel each, with a fake `kexec` that records its arguments and the digests
 * of the files it was handed (the real one would replace this machine's kernel).
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { startTestHelper } from "../helper/helper_testing.ts";
import { loopSkipReason, makeLoopDisk } from "../../fixtures/disks/loop_disk.ts";
import { DiskGuard } from "./disk_guard.ts";
import { KexecLoads } from "./kexec_loads.ts";
import { resolveInside } from "./inside_path.ts";
import { withServer } from "./https_origin_testing.ts";

const MIB = 1024 * 1024;
const skip = loopSkipReason();
const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const bytes = (n: number, seed: number) => new Uint8Array(n).map((_, i) => (i * seed + 11) & 0xff);

async function run(cmd: string, args: string[], stdin?: string): Promise<void> {
  const p = new Deno.Command(cmd, { args, stdin: "piped", stdout: "null", stderr: "piped" }).spawn();
  const w = p.stdin.getWriter();
  if (stdin !== undefined) await w.write(new TextEncoder().encode(stdin));
  await w.close();
  const out = await p.output();
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
}

/** A 24 MiB GPT disk image: partition 1 (label `old`) and 2 (label `rootfs`), ext4, each with /boot links. */
async function makeImage(dir: string, kernels: [Uint8Array, Uint8Array], initrd: Uint8Array): Promise<Uint8Array> {
  const img = `${dir}/disk.raw`;
  await Deno.writeFile(img, new Uint8Array(24 * MIB));
  await run("sfdisk", ["-q", img], "label: gpt\nstart=2048, size=20480, name=one\nstart=22528, size=24576, name=two\n");
  for (const [i, label] of ["old", "rootfs"].entries()) {
    const tree = `${dir}/tree${i}`;
    await Deno.mkdir(`${tree}/boot`, { recursive: true });
    await Deno.writeFile(`${tree}/boot/vmlinuz-6.1.0-28-amd64`, kernels[i]!);
    await Deno.symlink("vmlinuz-6.1.0-28-amd64", `${tree}/boot/vmlinuz`);
    await Deno.writeFile(`${tree}/boot/initrd.img-6.1.0-28-amd64`, initrd);
    await Deno.symlink("/boot/initrd.img-6.1.0-28-amd64", `${tree}/boot/initrd.img`); // absolute: inside the fs
    await Deno.symlink("../../../../../etc/hostname", `${tree}/boot/escape`);
    const [offset, sectors] = i === 0 ? [2048, 20480] : [22528, 24576];
    await run("mkfs.ext4", [
      "-q",
      "-F",
      "-L",
      label,
      "-d",
      tree,
      "-E",
      `offset=${offset * 512}`,
      img,
      `${sectors / 2}k`,
    ]);
  }
  return await Deno.readFile(img);
}

/** A fake kexec: appends its arguments, and for -l the SHA-256 of the kernel and initrd, to `log`. */
async function fakeKexec(dir: string): Promise<{ path: string; log: string; loaded: string }> {
  const path = `${dir}/kexec`;
  const log = `${dir}/kexec.log`;
  const loaded = `${dir}/kexec_loaded`;
  await Deno.writeTextFile(loaded, "0\n");
  await Deno.writeTextFile(
    path,
    `#!/bin/sh
echo "ARGS $*" >> '${log}'
if [ "$1" = "-l" ]; then
  sha256sum "$2" | cut -d' ' -f1 | sed 's/^/KERNEL /' >> '${log}'
  for a in "$@"; do case "$a" in --initrd=*) sha256sum "\${a#--initrd=}" | cut -d' ' -f1 | sed 's/^/INITRD /' >> '${log}';; esac; done
  echo 1 > '${loaded}'
fi
if [ "$1" = "-e" ]; then echo "kexec_core: Starting new kernel (fake)" >&2; exit 1; fi
`,
  );
  await Deno.chmod(path, 0o755);
  return { path, log, loaded };
}

Deno.test({
  name: "kexec.load takes kernel and initrd from the partition root=LABEL= names, through /boot links, then kexec.exec",
  ignore: skip !== undefined,
  async fn(t) {
    const dir = await Deno.makeTempDir({ prefix: "bcd-kexec-test-" });
    const kernels: [Uint8Array, Uint8Array] = [bytes(300_000, 3), bytes(400_000, 5)];
    const initrd = bytes(700_000, 7);
    const image = await makeImage(dir, kernels, initrd);
    const loop = await makeLoopDisk(32 * MIB, { partscan: true });
    const kexec = await fakeKexec(dir);
    let returned: (words: string) => void = () => {};
    const execReturned = new Promise<string>((r) => returned = r);
    const loads = new KexecLoads({
      guard: new DiskGuard({ dev: loop.devRoot }),
      tools: { kexec: kexec.path },
      loadedFlag: kexec.loaded,
      onExecReturned: (w) => returned(w),
    });
    const h = await startTestHelper({ role: "ramdisk", kexec: loads });
    try {
      await Deno.writeFile(loop.backingFile, image);
      await run("partx", ["--update", loop.devicePath]);
      const base = {
        source: "disk" as const,
        diskId: loop.diskId,
        kernel: "/boot/vmlinuz",
        initrd: "/boot/initrd.img",
      };
      await t.step("kexec.exec before a kernel is loaded is refused", async () => {
        await assert.rejects(h.client.call("kexec.exec", {}), /no kernel is loaded/);
      });
      await t.step("root=LABEL=rootfs picks partition 2 although partition 1 holds a kernel too", async () => {
        const cmdline = "root=LABEL=rootfs ro console=ttyS0";
        const ans = await h.client.call("kexec.load", { ...base, cmdline, kernelSha256: sha(kernels[1]) });
        assert.deepEqual(ans, { ok: true, kernelSha256: sha(kernels[1]), initrdSha256: sha(initrd), partition: 2 });
        const log = await Deno.readTextFile(kexec.log);
        assert.match(log, new RegExp(`--command-line=${cmdline}\n`));
        assert.match(log, new RegExp(`KERNEL ${sha(kernels[1])}\nINITRD ${sha(initrd)}\n`));
      });
      await t.step("without root=, the first partition holding the kernel", async () => {
        const ans = await h.client.call("kexec.load", { ...base, cmdline: "ro" });
        assert.ok(ans.ok && ans.partition === 1 && ans.kernelSha256 === sha(kernels[0]));
      });
      await t.step("refusals as data: a wrong digest, a missing file, a link out of the filesystem", async () => {
        const wrong = await h.client.call("kexec.load", { ...base, cmdline: "ro", kernelSha256: "ab".repeat(32) });
        assert.ok(!wrong.ok && wrong.reason === "digest-mismatch");
        const missing = await h.client.call("kexec.load", { ...base, kernel: "/boot/vmlinuz-7", cmdline: "ro" });
        assert.ok(!missing.ok && missing.reason === "kernel-not-found");
        const escape = await h.client.call("kexec.load", { ...base, kernel: "/boot/escape", cmdline: "ro" });
        assert.ok(!escape.ok && escape.reason === "kernel-not-found", "/etc/hostname of this machine is not read");
      });
      await t.step("nothing stays mounted and the disk's filesystems were not written", async () => {
        const mounts = await Deno.readTextFile("/proc/self/mountinfo");
        assert.ok(!mounts.includes(`/dev/${loop.kernelName}p`), "no partition of the disk is mounted");
        assert.deepEqual(sha(await Deno.readFile(loop.backingFile)), sha(image));
      });
      await t.step("kexec.exec answers, then runs kexec -e", async () => {
        assert.deepEqual(await h.client.call("kexec.exec", {}), { executing: true });
        assert.match(await execReturned, /kexec -e exited 1: kexec_core: Starting new kernel \(fake\)/);
        assert.match(await Deno.readTextFile(kexec.log), /ARGS -e\n$/);
      });
    } finally {
      await h.close();
      await loop.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "kexec.load downloads kernel and initrd over https against their digests, and refuses a wrong one",
  ignore: skip !== undefined,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "bcd-kexec-url-" });
    const kernel = bytes(200_000, 9);
    const initrd = bytes(300_000, 13);
    try {
      const kexec = await fakeKexec(dir);
      await withServer(new Uint8Array(0), async (base, fetcher) => {
        const loads = new KexecLoads({ fetch: fetcher, tools: { kexec: kexec.path }, loadedFlag: kexec.loaded });
        const h = await startTestHelper({ role: "ramdisk", kexec: loads });
        try {
          const args = {
            source: "url" as const,
            kernel: `${base}/vmlinuz`,
            kernelSha256: sha(kernel),
            initrd: `${base}/initrd`,
            initrdSha256: sha(initrd),
            cmdline: "console=ttyS0",
          };
          assert.deepEqual(await h.client.call("kexec.load", args), {
            ok: true,
            kernelSha256: sha(kernel),
            initrdSha256: sha(initrd),
          });
          assert.match(
            await Deno.readTextFile(kexec.log),
            new RegExp(`KERNEL ${sha(kernel)}\nINITRD ${sha(initrd)}\n`),
          );
          const wrong = await h.client.call("kexec.load", { ...args, initrdSha256: sha(kernel) });
          assert.ok(!wrong.ok && wrong.reason === "digest-mismatch");
          const http = await h.client.call("kexec.load", { ...args, kernel: `${base}/to-http` });
          assert.ok(!http.ok && http.reason === "not-https", JSON.stringify(http));
        } finally {
          await h.close();
        }
      }, { "/vmlinuz": kernel, "/initrd": initrd });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("resolveInside follows links inside the root only: .. stops at it, absolute links restart at it", async () => {
  const root = await Deno.makeTempDir({ prefix: "bcd-inside-" });
  try {
    await Deno.mkdir(`${root}/boot`);
    await Deno.writeTextFile(`${root}/boot/vmlinuz-1`, "k");
    await Deno.symlink("vmlinuz-1", `${root}/boot/rel`);
    await Deno.symlink("/boot/vmlinuz-1", `${root}/boot/abs`);
    await Deno.symlink("../../../../boot/vmlinuz-1", `${root}/boot/up`);
    await Deno.symlink("/etc/hostname", `${root}/boot/host`);
    await Deno.symlink("loop", `${root}/boot/loop`);
    await Deno.symlink("/boot", `${root}/bootlink`);
    assert.equal(await resolveInside(root, "/boot/rel"), `${root}/boot/vmlinuz-1`);
    assert.equal(await resolveInside(root, "/boot/abs"), `${root}/boot/vmlinuz-1`);
    assert.equal(await resolveInside(root, "/boot/up"), `${root}/boot/vmlinuz-1`, ".. stops at the root");
    assert.equal(await resolveInside(root, "/bootlink/rel"), `${root}/boot/vmlinuz-1`);
    assert.equal(await resolveInside(root, "/boot/host"), undefined, "the host's /etc/hostname is not reached");
    assert.equal(await resolveInside(root, "/boot/loop"), undefined, "a link loop ends");
    assert.equal(await resolveInside(root, "/boot"), undefined, "a directory is not a kernel");
    assert.equal(await resolveInside(root, "/boot/vmlinuz-1/x"), undefined);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
