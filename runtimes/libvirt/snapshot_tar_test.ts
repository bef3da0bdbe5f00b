import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readTar, SnapshotArchiveRefused, tarHeader, writeTar } from "./snapshot_tar.ts";

const ALLOWED = new Map([["meta.json", 1024], ["disk.qcow2", 1 << 20], ["memory.save", 1 << 20]]);

async function tmp(): Promise<string> {
  return await Deno.makeTempDir({ prefix: "bcd-snaptar-" });
}

Deno.test("writeTar() hashes what it writes, GNU tar lists it, and readTar() gives the same files back", async () => {
  const dir = await tmp();
  try {
    const disk = new Uint8Array(70_000).map((_, i) => i % 251);
    await Deno.writeFile(`${dir}/disk.src`, disk);
    const meta = new TextEncoder().encode('{"runtime":"libvirt-kvm"}');
    const r = await writeTar(`${dir}/s.tar`, [{ name: "meta.json", data: meta }, {
      name: "disk.qcow2",
      path: `${dir}/disk.src`,
    }]);
    const bytes = await Deno.readFile(`${dir}/s.tar`);
    assert.equal(r.size, bytes.length);
    assert.equal(r.sha256, createHash("sha256").update(bytes).digest("hex"));
    const tv = await new Deno.Command("tar", { args: ["-tvf", `${dir}/s.tar`] }).output();
    assert.ok(tv.success, new TextDecoder().decode(tv.stderr));
    assert.match(new TextDecoder().decode(tv.stdout), /disk\.qcow2/);
    await Deno.mkdir(`${dir}/out`);
    const got = await readTar(`${dir}/s.tar`, `${dir}/out`, ALLOWED);
    assert.deepEqual([...got], [["meta.json", meta.length], ["disk.qcow2", disk.length]]);
    assert.deepEqual(await Deno.readFile(`${dir}/out/disk.qcow2`), disk);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a size of 8 GiB or more is written base-256, which GNU tar reads", () => {
  const h = tarHeader("memory.save", 9 * 1024 ** 3);
  assert.equal(h[124], 0x80);
  let v = 0n;
  for (let i = 125; i < 136; i++) v = (v << 8n) | BigInt(h[i]!);
  assert.equal(v, 9n * 1024n ** 3n);
});

Deno.test("readTar() refuses hostile archives by name, and writes nothing over an existing file", async (t) => {
  const dir = await tmp();
  try {
    const make = async (name: string, args: string[], prep: (d: string) => Promise<void>) => {
      const src = `${dir}/src-${name}`;
      await Deno.mkdir(src);
      await prep(src);
      const out = await new Deno.Command("tar", {
        args: ["--format=ustar", "-cf", `${dir}/${name}.tar`, "-C", src, ...args],
      })
        .output();
      assert.ok(out.success, new TextDecoder().decode(out.stderr));
      return `${dir}/${name}.tar`;
    };
    const rows: Array<[string, () => Promise<string>, RegExp]> = [
      ["a name a snapshot does not hold", () =>
        make("x", ["etc"], async (d) => {
          await Deno.mkdir(`${d}/etc`);
        }), /not a regular file|not one a snapshot holds/],
      [
        "a symlink named like an entry",
        () => make("l", ["disk.qcow2"], (d) => Deno.symlink("/etc/shadow", `${d}/disk.qcow2`)),
        /not a regular file/,
      ],
      [
        "an entry over its bound",
        () => make("b", ["meta.json"], (d) => Deno.writeFile(`${d}/meta.json`, new Uint8Array(4096))),
        /more than its 1024/,
      ],
      [
        "a path",
        () => make("p", ["./meta.json"], (d) => Deno.writeFile(`${d}/meta.json`, new Uint8Array(4))),
        /not one a snapshot holds/,
      ],
    ];
    for (const [what, build, msg] of rows) {
      await t.step(what, async () => {
        const tar = await build();
        const out = await Deno.makeTempDir({ dir });
        await assert.rejects(
          readTar(tar, out, ALLOWED),
          (e) => e instanceof SnapshotArchiveRefused && msg.test(e.message),
        );
      });
    }
    await t.step("a flipped byte in a header fails its checksum", async () => {
      await writeTar(`${dir}/c.tar`, [{ name: "meta.json", data: new Uint8Array(3) }]);
      const b = await Deno.readFile(`${dir}/c.tar`);
      b[10] = 0x41;
      await Deno.writeFile(`${dir}/c.tar`, b);
      const out = await Deno.makeTempDir({ dir });
      await assert.rejects(readTar(`${dir}/c.tar`, out, ALLOWED), /bad checksum/);
    });
    await t.step("an entry that exists in the target directory is never overwritten", async () => {
      await writeTar(`${dir}/e.tar`, [{ name: "meta.json", data: new Uint8Array(3) }]);
      const out = await Deno.makeTempDir({ dir });
      await Deno.writeTextFile(`${out}/meta.json`, "keep");
      await assert.rejects(readTar(`${dir}/e.tar`, out, ALLOWED), Deno.errors.AlreadyExists);
      assert.equal(await Deno.readTextFile(`${out}/meta.json`), "keep");
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
