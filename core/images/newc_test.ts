import assert from "node:assert/strict";
import { join } from "node:path";
import { alignmentPadding, appendArchive, newcArchive, type NewcEntry, writeInitramfs } from "./newc.ts";

function _has(tool: string): boolean {
  try {
    return new Deno.Command(tool, { args: ["--version"], stdout: "null", stderr: "null" }).outputSync().success;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}
const HAS_CPIO = _has("cpio");
if (!HAS_CPIO) console.log("skipping newc tests against cpio: `cpio` is not installed (Debian package `cpio`)");

async function cpio(args: string[], stdin: Uint8Array, cwd?: string): Promise<string> {
  const p = new Deno.Command("cpio", { args, cwd, stdin: "piped", stdout: "piped", stderr: "piped" }).spawn();
  const w = p.stdin.getWriter();
  await w.write(stdin);
  await w.close();
  const out = await p.output();
  if (!out.success) throw new Error(`cpio ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  return new TextDecoder().decode(out.stdout);
}

function payload(n: number): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (i * 37 + n) & 0xff);
}

/** The guest-agent overlay of seed 002, with a payload of `n` bytes. */
function entries(n: number): NewcEntry[] {
  return [
    { type: "dir", path: "sbin", mode: 0o755 },
    { type: "file", path: "sbin/runtime-adapter-guest", data: payload(n), mode: 0o755 },
    { type: "file", path: "sbin/runtime-adapter-init", data: payload(n + 1), mode: 0o750, uid: 1000, gid: 1001 },
    { type: "symlink", path: "sbin/nvx-managed-agent", target: "runtime-adapter-init" },
    { type: "symlink", path: "sbin/nvx-init-agent", target: "/sbin/runtime-adapter-layered", uid: 7, gid: 8 },
    { type: "dir", path: "etc", mode: 0o700, uid: 5, gid: 6 },
    { type: "file", path: `etc/${"n".repeat(n)}`, data: payload(3 * n), mode: 0o600 },
  ];
}

Deno.test({
  name: "newc archives list back with cpio -t and extract equal with cpio -i, for payloads of every length mod 4",
  ignore: !HAS_CPIO,
  async fn(t) {
    for (let n = 1; n <= 8; n++) {
      await t.step(`payload of ${n} bytes (mod 4 = ${n % 4})`, async () => {
        const archive = newcArchive(entries(n));
        assert.equal(archive.length % 4, 0);
        const listed = (await cpio(["-t", "--quiet"], archive)).trim().split("\n");
        assert.deepEqual(listed, entries(n).map((e) => e.path));
        const verbose = (await cpio(["-tv", "--quiet", "--numeric-uid-gid"], archive)).trim().split("\n");
        assert.match(verbose[0]!, /^drwxr-xr-x +2 0 +0 +0 /);
        assert.match(verbose[2]!, new RegExp(`^-rwxr-x--- +1 1000 +1001 +${n + 1} `));
        assert.match(verbose[3]!, /^lrwxrwxrwx +1 0 +0 .* sbin\/nvx-managed-agent -> runtime-adapter-init$/);
        assert.match(verbose[4]!, /^lrwxrwxrwx +1 7 +8 .* -> \/sbin\/runtime-adapter-layered$/);
        const dir = await Deno.makeTempDir();
        try {
          await cpio(["-i", "-d", "--quiet"], archive, dir);
          for (const e of entries(n)) {
            const p = join(dir, e.path);
            const st = await Deno.lstat(p);
            assert.equal(st.uid, e.uid ?? 0, e.path);
            assert.equal(st.gid, e.gid ?? 0, e.path);
            if (e.type === "file") {
              assert.deepEqual(await Deno.readFile(p), e.data);
              assert.equal(st.mode! & 0o7777, e.mode);
            } else if (e.type === "dir") {
              assert.ok(st.isDirectory);
              assert.equal(st.mode! & 0o7777, e.mode);
            } else assert.equal(await Deno.readLink(p), e.target);
          }
        } finally {
          await Deno.remove(dir, { recursive: true });
        }
      });
    }
  },
});

Deno.test("newc headers and data are padded to 4 bytes, and the archive ends with TRAILER!!!", () => {
  for (let n = 0; n < 8; n++) {
    const a = newcArchive([{ type: "file", path: "x".repeat(n + 1), data: payload(n), mode: 0o644 }]);
    const text = new TextDecoder("latin1").decode(a);
    assert.equal(text.slice(0, 6), "070701");
    const nameEnd = 110 + n + 2; // name + NUL
    const dataAt = nameEnd + alignmentPadding(nameEnd);
    assert.equal(dataAt % 4, 0);
    assert.deepEqual(a.subarray(dataAt, dataAt + n), payload(n));
    const trailerAt = dataAt + n + alignmentPadding(n);
    assert.equal(text.slice(trailerAt, trailerAt + 6), "070701");
    assert.equal(text.slice(trailerAt + 110, trailerAt + 120), "TRAILER!!!");
    assert.equal(a.length % 4, 0);
  }
});

Deno.test("newcArchive() refuses absolute, empty, . and .. paths, duplicates and out-of-range fields", () => {
  for (const path of ["/sbin/x", "", "a/../b", "./a", "a//b", "a/", "a\0b"]) {
    assert.throws(() => newcArchive([{ type: "dir", path, mode: 0o755 }]), RangeError, path);
  }
  assert.throws(() => newcArchive([{ type: "dir", path: "a", mode: 0o755 }, { type: "dir", path: "a", mode: 0o755 }]));
  assert.throws(() => newcArchive([{ type: "dir", path: "a", mode: 0o10000 }]), RangeError);
  assert.throws(() => newcArchive([{ type: "dir", path: "a", mode: 0o755, uid: 2 ** 32 }]), RangeError);
  assert.throws(() => newcArchive([{ type: "symlink", path: "a", target: "" }]), RangeError);
});

Deno.test({
  name: "writeInitramfs() keeps the original bytes, pads with zeros to a multiple of 4 and appends the archive",
  ignore: !HAS_CPIO,
  async fn(t) {
    for (let extra = 0; extra < 4; extra++) {
      await t.step(`base initramfs of length mod 4 = ${extra}`, async () => {
        const dir = await Deno.makeTempDir();
        try {
          // A real base archive made by cpio -o -H newc, then `extra` bytes so its length is of every residue.
          await Deno.mkdir(join(dir, "base/sbin"), { recursive: true });
          await Deno.writeTextFile(join(dir, "base/init"), "#!/bin/sh\n");
          let base = new TextEncoder().encode(
            await cpio(["-o", "-H", "newc", "--quiet"], new TextEncoder().encode("init\nsbin\n"), join(dir, "base")),
          );
          base = new Uint8Array([...base, ...new Uint8Array((4 - (base.length % 4)) % 4), ...payload(extra)]);
          assert.equal(base.length % 4, extra);
          await Deno.writeFile(join(dir, "base.img"), base);
          const offset = await writeInitramfs(join(dir, "base.img"), join(dir, "out.img"), entries(5));
          const out = await Deno.readFile(join(dir, "out.img"));
          assert.deepEqual(out.subarray(0, base.length), base);
          assert.equal(offset % 4, 0);
          assert.ok(out.subarray(base.length, offset).every((b) => b === 0));
          assert.equal(offset - base.length, alignmentPadding(base.length));
          assert.deepEqual(out.subarray(offset), newcArchive(entries(5)));
          assert.deepEqual(out, appendArchive(base, newcArchive(entries(5))));
          const listed = (await cpio(["-t", "--quiet"], out.subarray(offset))).trim().split("\n");
          assert.deepEqual(listed, entries(5).map((e) => e.path));
          assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).sort(), ["base", "base.img", "out.img"]);
        } finally {
          await Deno.remove(dir, { recursive: true });
        }
      });
    }
  },
});
