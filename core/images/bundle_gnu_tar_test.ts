/**
 * The safety kernel against bundles made by real GNU `tar`: what it writes for ordinary trees is accepted and
 * unpacked byte for byte with pinned modes, and each hostile member type it can produce is refused.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { unpack, walk } from "./bundle_walk.ts";
import { UnsafeBundle, type UnsafeReason } from "./errors.ts";

function _has(tool: string): boolean {
  try {
    return new Deno.Command(tool, { args: ["--version"], stdout: "null", stderr: "null" }).outputSync().success;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}
const HAS_TAR = _has("tar");
if (!HAS_TAR) console.log("skipping GNU tar bundle tests: `tar` is not installed (Debian package `tar`)");

async function sh(cwd: string, script: string): Promise<void> {
  const out = await new Deno.Command("sh", { args: ["-ec", script], cwd, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) throw new Error(`sh failed: ${script}\n${new TextDecoder().decode(out.stderr)}`);
}

async function reasonOf(tgz: Uint8Array): Promise<UnsafeReason | "accepted"> {
  try {
    await walk(tgz);
    return "accepted";
  } catch (e) {
    if (e instanceof UnsafeBundle) return e.reason;
    throw e;
  }
}

Deno.test({
  name: "GNU tar bundles in gnu, pax, ustar and v7 formats unpack byte for byte with modes pinned 0755/0644",
  ignore: !HAS_TAR,
  async fn(t) {
    const dir = await Deno.makeTempDir();
    try {
      await sh(
        dir,
        `mkdir -p src/etc/app/conf.d src/empty && printf 'a=1\\n' > src/etc/app/app.toml
         head -c 70000 /dev/urandom > src/etc/app/blob && : > src/etc/app/zero
         mkdir -p src/${"d".repeat(60)}/${"e".repeat(60)} && echo deep > src/${"d".repeat(60)}/${"e".repeat(60)}/${
          "f".repeat(60)
        }
         chmod 0700 src/etc && chmod 0600 src/etc/app/app.toml && chmod 4777 src/etc/app/blob`,
      );
      for (const format of ["gnu", "pax", "ustar", "posix"]) {
        await t.step(format, async () => {
          await sh(dir, `rm -rf out.tgz && tar --format=${format} --owner=4242 --group=4242 -czf out.tgz -C src .`);
          const tgz = await Deno.readFile(join(dir, "out.tgz"));
          await walk(tgz);
          const dest = join(dir, `dest-${format}`);
          await Deno.mkdir(dest);
          await unpack(tgz, dest);
          await sh(dir, `diff -r src dest-${format}`);
          for (const p of ["etc", "etc/app", "etc/app/conf.d", "empty"]) {
            assert.equal((await Deno.stat(join(dest, p))).mode! & 0o7777, 0o755, p);
          }
          for (const p of ["etc/app/app.toml", "etc/app/blob", "etc/app/zero"]) {
            assert.equal((await Deno.stat(join(dest, p))).mode! & 0o7777, 0o644, p);
          }
        });
      }
      await t.step("v7 (short names only)", async () => {
        await sh(dir, `rm -rf v7 && mkdir -p v7/a && echo x > v7/a/b && tar --format=v7 -czf v7.tgz -C v7 .`);
        await walk(await Deno.readFile(join(dir, "v7.tgz")));
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** Hostile members GNU tar itself writes: one row per refused kind, with the reason. */
const GNU_HOSTILE: Array<[string, string, UnsafeReason]> = [
  ["a symlink", "ln -s /etc/shadow s/l && tar -czf b.tgz -C s .", "symlink"],
  ["a hard link", "echo x > s/f && ln s/f s/g && tar -czf b.tgz -C s .", "hardlink"],
  ["a fifo", "mkfifo s/p && tar -czf b.tgz -C s .", "fifo"],
  ["a character device", "mknod s/null c 1 3 && tar -czf b.tgz -C s .", "device"],
  ["a block device", "mknod s/blk b 7 0 && tar -czf b.tgz -C s .", "device"],
  ["a GNU sparse file", "truncate -s 1M s/sp && echo x >> s/sp && tar --format=gnu -S -czf b.tgz -C s .", "sparse"],
  ["a PAX sparse file", "truncate -s 1M s/sp && echo x >> s/sp && tar --format=pax -S -czf b.tgz -C s .", "sparse"],
  ["an absolute name (-P)", 'echo x > s/f && tar -P -czf b.tgz "$PWD/s/f"', "absolute"],
  ["a .. name (--transform)", "echo x > s/f && tar --transform 's,^s/f,../evil,' -czf b.tgz s/f", "traversal"],
  [
    "a long .. name (gnu, --transform)",
    `echo x > s/f && tar --format=gnu --transform 's,^s/f,${"a".repeat(120)}/../../evil,' -czf b.tgz s/f`,
    "traversal",
  ],
  [
    "a long .. name (pax, --transform)",
    `echo x > s/f && tar --format=pax --transform 's,^s/f,${"a".repeat(120)}/../../evil,' -czf b.tgz s/f`,
    "traversal",
  ],
  [
    "a duplicate (two files of one name)",
    "mkdir t && echo x > s/f && echo y > t/f && tar -czf b.tgz -C s f -C ../t f",
    "duplicate",
  ],
  ["a backslash name", "echo x > 's/a\\b' && tar -czf b.tgz -C s .", "backslash"],
  ["a drive name", "echo x > 's/C:x' && tar -czf b.tgz -C s C:x", "drive"],
  [
    "a global PAX header",
    "echo x > s/f && tar --format=pax --pax-option=globexthdr.name=g,comment=x -czf b.tgz -C s .",
    "unsupported-type",
  ],
  ["an uncompressed tar", "echo x > s/f && tar -cf b.tgz -C s .", "not-gzip"],
  ["an xz-compressed tar", "echo x > s/f && tar -cJf b.tgz -C s .", "not-gzip"],
];

Deno.test({
  name: "GNU tar's hostile members (links, fifo, devices, sparse, -P, ..) are refused with their reasons",
  ignore: !HAS_TAR,
  async fn(t) {
    for (const [what, script, reason] of GNU_HOSTILE) {
      if (script.includes("mknod") && Deno.uid() !== 0) {
        console.log(`skipping GNU tar row "${what}": mknod needs root`);
        continue;
      }
      await t.step(`${what}: ${reason}`, async () => {
        const dir = await Deno.makeTempDir();
        try {
          await sh(dir, `mkdir s && ${script}`);
          assert.equal(await reasonOf(await Deno.readFile(join(dir, "b.tgz"))), reason);
        } finally {
          await Deno.remove(dir, { recursive: true });
        }
      });
    }
  },
});

Deno.test({
  name: "GNU tar: gzip truncated, tar truncated and a corrupted header checksum are refused",
  ignore: !HAS_TAR,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      await sh(dir, "mkdir s && head -c 5000 /dev/urandom > s/f && tar -cf b.tar -C s . && gzip -k b.tar");
      const tar = await Deno.readFile(join(dir, "b.tar"));
      const tgz = await Deno.readFile(join(dir, "b.tar.gz"));
      assert.equal(await reasonOf(tgz), "accepted");
      assert.equal(await reasonOf(tgz.subarray(0, tgz.length - 4)), "bad-gzip");
      assert.equal(await reasonOf(tgz.subarray(0, tgz.length / 2)), "bad-gzip");
      const gzipOf = async (bytes: Uint8Array) => {
        await Deno.writeFile(join(dir, "x.tar"), bytes);
        await sh(dir, "rm -f x.tar.gz && gzip x.tar");
        return await Deno.readFile(join(dir, "x.tar.gz"));
      };
      assert.equal(await reasonOf(await gzipOf(tar.subarray(0, 512 + 512 + 3000))), "truncated");
      const bad = tar.slice();
      bad[512 + 10] = bad[512 + 10]! ^ 0x20; // inside the second member's (./f) name: the checksum no longer matches
      assert.equal(await reasonOf(await gzipOf(bad)), "bad-checksum");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
