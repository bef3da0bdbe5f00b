import assert from "node:assert/strict";
import { join } from "node:path";
import { gz, paxRecord, type RawMember, tarOf, tgzOf } from "./_tar_gen.ts";
import { type Check, MAX_BYTES, MAX_FILES, MAX_TAR_BYTES, MAX_WIRE_BYTES, unpack, walk } from "./bundle_walk.ts";
import { UnsafeBundle, type UnsafeReason } from "./errors.ts";

async function reasonOf(tgz: Uint8Array, check: Check = {}): Promise<UnsafeReason | "accepted"> {
  try {
    await walk(tgz, check);
    return "accepted";
  } catch (e) {
    if (e instanceof UnsafeBundle) return e.reason;
    throw e;
  }
}

const enc = new TextEncoder();
function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
const pax = (records: string): RawMember => ({ name: "PaxHeaders/x", type: "x", content: records });

/** Hostile bundles from the generator: one row per rule of seed 004 T1, with the reason each must get. */
const HOSTILE: Array<[string, Uint8Array, UnsafeReason]> = [
  ["an absolute name", tgzOf([{ name: "/etc/passwd", content: "x" }]), "absolute"],
  ["a leading ..", tgzOf([{ name: "../x", content: "x" }]), "traversal"],
  ["a .. that climbs out in the middle", tgzOf([{ name: "a/../../x", content: "x" }]), "traversal"],
  ["a .. that would stay inside", tgzOf([{ name: "a/b/../c", content: "x" }]), "traversal"],
  ["a bare ..", tgzOf([{ name: "..", type: "5" }]), "traversal"],
  ["a drive-relative name", tgzOf([{ name: "C:x", content: "x" }]), "drive"],
  ["a drive-absolute name", tgzOf([{ name: "c:/windows/x", content: "x" }]), "drive"],
  ["a backslash traversal", tgzOf([{ name: "a\\..\\..\\x", content: "x" }]), "backslash"],
  ["a backslash root", tgzOf([{ name: "\\x", content: "x" }]), "backslash"],
  ["a duplicate name", tgzOf([{ name: "a", content: "1" }, { name: "a", content: "2" }]), "duplicate"],
  ["a duplicate after cleaning", tgzOf([{ name: "./a", content: "1" }, { name: "a", content: "2" }]), "duplicate"],
  ["a duplicate directory", tgzOf([{ name: "d/" }, { name: "./d/" }]), "duplicate"],
  ["a symlink", tgzOf([{ name: "l", type: "2", linkname: "/etc/shadow" }]), "symlink"],
  ["a hardlink", tgzOf([{ name: "h", type: "1", linkname: "/etc/shadow" }]), "hardlink"],
  ["a character device", tgzOf([{ name: "c", type: "3" }]), "device"],
  ["a block device", tgzOf([{ name: "b", type: "4" }]), "device"],
  ["a fifo", tgzOf([{ name: "p", type: "6" }]), "fifo"],
  ["a GNU sparse file", tgzOf([{ name: "s", type: "S" }]), "sparse"],
  ["a PAX sparse file", tgzOf([pax(paxRecord("GNU.sparse.major", "1")), { name: "s", content: "x" }]), "sparse"],
  ["a global PAX header", tgzOf([{ name: "g", type: "g", content: paxRecord("comment", "x") }]), "unsupported-type"],
  ["a contiguous file", tgzOf([{ name: "c", type: "7", content: "x" }]), "unsupported-type"],
  ["a GNU long link name", tgzOf([{ name: "././@LongLink", type: "K", content: "x\0" }]), "unsupported-type"],
  ["an unknown type", tgzOf([{ name: "q", type: "Q" }]), "unsupported-type"],
  [
    "a PAX path that climbs out",
    tgzOf([pax(paxRecord("path", "../../evil")), { name: "ok", content: "x" }]),
    "traversal",
  ],
  ["a PAX path that is absolute", tgzOf([pax(paxRecord("path", "/root/x")), { name: "ok", content: "x" }]), "absolute"],
  ["a PAX path with a backslash", tgzOf([pax(paxRecord("path", "a\\b")), { name: "ok", content: "x" }]), "backslash"],
  [
    "a GNU long name that is absolute",
    tgzOf([{ name: "././@LongLink", type: "L", content: "/x\0" }, { name: "ok", content: "x" }]),
    "absolute",
  ],
  [
    "a GNU long name that climbs out",
    tgzOf([{ name: "././@LongLink", type: "L", content: "a/../../x" }, { name: "ok" }]),
    "traversal",
  ],
  ["a ustar prefix that climbs out", tgzOf([{ name: "x", prefix: "..", content: "x" }]), "traversal"],
  ["a member below a file", tgzOf([{ name: "f", content: "x" }, { name: "f/x", content: "y" }]), "conflict"],
  [
    "a file where a directory is implied",
    tgzOf([{ name: "d/x", content: "y" }, { name: "d", content: "x" }]),
    "conflict",
  ],
  ["a regular file as the root", tgzOf([{ name: "./", type: "0", content: "x" }]), "conflict"],
  ["a bad header checksum", tgzOf([{ name: "a", content: "x", checksumDelta: 1 }]), "bad-checksum"],
  ["a non-octal size", tgzOf([{ name: "a", content: "x", sizeField: "00000000x1" }]), "bad-header"],
  [
    "a size past 2^53 in base-256",
    tgzOf([{ name: "a", patch: { 124: 0x80, 125: 0xff, 126: 0xff, 127: 0xff } }]),
    "too-large",
  ],
  ["a size that lies past the data", tgzOf([{ name: "a", content: "x", sizeField: "00000010000" }]), "truncated"],
  ["a tar without its end marker", tgzOf([{ name: "a", content: "x" }], { end: false }), "truncated"],
  [
    "a tar with one end block",
    gz(concat(tarOf([{ name: "a", content: "x" }], { end: false }), new Uint8Array(512))),
    "truncated",
  ],
  ["a tar cut inside a header", gz(tarOf([{ name: "a", content: "x" }]).subarray(0, 1024 + 100)), "truncated"],
  [
    "an extension header too large",
    tgzOf([{ name: "x", type: "x", content: "x".repeat(64 * 1024 + 1) }]),
    "bad-header",
  ],
  [
    "two PAX headers for one member",
    tgzOf([pax(paxRecord("path", "a")), pax(paxRecord("path", "b")), { name: "c" }]),
    "bad-header",
  ],
  ["a malformed PAX record", tgzOf([pax("99 path=a\n"), { name: "c" }]), "bad-header"],
  ["a PAX size that is not a number", tgzOf([pax(paxRecord("size", "-1")), { name: "c" }]), "bad-header"],
  ["an extension header before the end", tgzOf([pax(paxRecord("path", "a"))]), "bad-header"],
  ["a directory with a size", tgzOf([{ name: "d/", type: "5", sizeField: "00000000001" }]), "bad-header"],
  [
    "garbage after the end marker",
    gz(new Uint8Array([...tarOf([{ name: "a", content: "x" }]), 1, 2, 3])),
    "bad-header",
  ],
  ["an empty name", tgzOf([{ name: "", content: "x" }]), "bad-name"],
  ["a name that is not UTF-8", tgzOf([{ name: "a", patch: { 0: 0xff, 1: 0xfe } }]), "bad-name"],
  ["a component of 256 bytes", tgzOf([pax(paxRecord("path", "a".repeat(256))), { name: "c" }]), "bad-name"],
  [
    "a name of 4097 bytes",
    tgzOf([pax(paxRecord("path", ("a".repeat(200) + "/").repeat(20) + "b".repeat(77))), { name: "c" }]),
    "bad-name",
  ],
  ["a plain (uncompressed) tar", tarOf([{ name: "a", content: "x" }]), "not-gzip"],
  ["a bzip2 stream", enc.encode("BZh91AY&SY" + "x".repeat(40)), "not-gzip"],
];

Deno.test("walk() refuses every hostile bundle of the generator with its named reason", async (t) => {
  for (const [what, tgz, reason] of HOSTILE) {
    await t.step(`${what}: ${reason}`, async () => {
      assert.equal(await reasonOf(tgz), reason);
    });
  }
});

Deno.test("walk() accepts the generator's well-formed members (PAX path, GNU long name, ustar prefix, ./)", async () => {
  const seen: string[] = [];
  await walk(
    tgzOf([
      { name: "./", type: "5" },
      pax(paxRecord("path", "long/" + "p".repeat(150)) + paxRecord("mtime", "1.5")),
      { name: "long/ppp", content: "pax" },
      { name: "././@LongLink", type: "L", content: "gnu/" + "g".repeat(150) + "\0" },
      { name: "gnu/ggg", content: "gnu" },
      { name: "file", prefix: "ustar/dir", content: "ustar" },
      { name: "empty", content: "" },
    ]),
    { member: (c, t) => void seen.push(`${t}:${c}`) },
  );
  assert.deepEqual(seen, [
    "5:.",
    `0:long/${"p".repeat(150)}`,
    `0:gnu/${"g".repeat(150)}`,
    "0:ustar/dir/file",
    "0:empty",
  ]);
});

Deno.test("gzip: a stream cut before its trailer, a bad CRC, a bad length and trailing bytes are refused", async (t) => {
  const good = tgzOf([{ name: "a", content: "hello" }]);
  assert.equal(await reasonOf(good), "accepted");
  const rows: Array<[string, Uint8Array]> = [
    ["trailer cut (the tar inside is whole)", good.subarray(0, good.length - 8)],
    ["last byte cut", good.subarray(0, good.length - 1)],
    ["cut in the middle of the deflate data", good.subarray(0, 30)],
    ["bad CRC", Uint8Array.from(good, (b, i) => i === good.length - 8 ? b ^ 1 : b)],
    ["bad ISIZE", Uint8Array.from(good, (b, i) => i === good.length - 3 ? b ^ 1 : b)],
    ["trailing garbage", new Uint8Array([...good, 0x41])],
    ["a second member", new Uint8Array([...good, ...good])],
  ];
  for (const [what, bytes] of rows) {
    await t.step(what, async () => assert.equal(await reasonOf(bytes), "bad-gzip"));
  }
});

Deno.test("caps: MAX_FILES members are accepted and one more is refused", async () => {
  const members = (n: number): RawMember[] => Array.from({ length: n }, (_, i) => ({ name: `f${i}`, content: "" }));
  assert.equal(await reasonOf(tgzOf(members(MAX_FILES))), "accepted");
  assert.equal(await reasonOf(tgzOf(members(MAX_FILES + 1))), "too-many-files");
  // Every member counts: directories too.
  const dirs = [{ name: "d/" }, ...members(MAX_FILES - 1)];
  assert.equal(await reasonOf(tgzOf(dirs)), "accepted");
  assert.equal(await reasonOf(tgzOf([{ name: "e/" }, ...dirs])), "too-many-files");
});

Deno.test("caps: exactly MAX_BYTES of content is accepted and one byte more is refused", async () => {
  const half = new Uint8Array(MAX_BYTES / 2);
  assert.equal(await reasonOf(tgzOf([{ name: "a", content: half }, { name: "b", content: half }])), "accepted");
  assert.equal(
    await reasonOf(tgzOf([{ name: "a", content: half }, { name: "b", content: half }, { name: "c", content: "x" }])),
    "too-large",
  );
  assert.equal(await reasonOf(tgzOf([{ name: "a", content: new Uint8Array(MAX_BYTES + 1) }])), "too-large");
});

Deno.test("caps: the size is refused from the header, before the data is read or allocated", async () => {
  // A header claiming 1 TiB with no data behind it: refused as too-large, not as truncated.
  assert.equal(await reasonOf(tgzOf([{ name: "a", sizeField: "20000000000" }])), "too-large");
});

Deno.test("caps: MAX_WIRE_BYTES compressed bytes pass the wire check and one more is refused", async () => {
  const at = new Uint8Array(MAX_WIRE_BYTES);
  at.set([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
  assert.notEqual(await reasonOf(at), "wire-too-large");
  const over = new Uint8Array(MAX_WIRE_BYTES + 1);
  over.set([0x1f, 0x8b, 8]);
  assert.equal(await reasonOf(over), "wire-too-large");
});

Deno.test("caps: a gzip bomb of zeros after the end marker stops at MAX_TAR_BYTES", async () => {
  const bomb = gz(concat(tarOf([{ name: "a", content: "x" }]), new Uint8Array(MAX_TAR_BYTES)));
  assert.equal(await reasonOf(bomb), "stream-too-large");
});

Deno.test("Check: member() runs before the bytes, content() after, and their errors pass through unchanged", async () => {
  const calls: string[] = [];
  const tgz = tgzOf([{ name: "d/" }, { name: "d/a.json", content: "{}" }]);
  await walk(tgz, {
    member: (c, t) => void calls.push(`member ${t} ${c}`),
    content: (c, b) => void calls.push(`content ${c} ${new TextDecoder().decode(b)}`),
  });
  assert.deepEqual(calls, ["member 5 d", "member 0 d/a.json", "content d/a.json {}"]);
  class SchemaError extends Error {}
  const err = new SchemaError("not in the allow-list");
  await assert.rejects(
    walk(tgz, {
      member: (c) => {
        if (c === "d/a.json") throw err;
      },
    }),
    (e) => e === err,
  );
  await assert.rejects(walk(tgz, { content: () => Promise.reject(err) }), (e) => e === err);
});

Deno.test("unpack() writes the bundle with pinned modes, and a refusal or Check error leaves the directory empty", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const dest = join(dir, "d");
    await Deno.mkdir(dest);
    await unpack(tgzOf([{ name: "a/b/c.txt", content: "c" }, { name: "a/e/" }, { name: "top", content: "t" }]), dest);
    assert.equal(await Deno.readTextFile(join(dest, "a/b/c.txt")), "c");
    assert.equal((await Deno.stat(join(dest, "a/b"))).mode! & 0o7777, 0o755);
    assert.equal((await Deno.stat(join(dest, "a/e"))).mode! & 0o7777, 0o755);
    assert.equal((await Deno.stat(join(dest, "top"))).mode! & 0o7777, 0o644);
    await assert.rejects(unpack(tgzOf([{ name: "x", content: "x" }]), dest), TypeError); // not empty
    await Deno.remove(dest, { recursive: true });
    await Deno.mkdir(dest);
    const bad = tgzOf([{ name: "ok/1", content: "1" }, { name: "ok/2", content: "2" }, {
      name: "../evil",
      content: "e",
    }]);
    await assert.rejects(unpack(bad, dest), (e) => e instanceof UnsafeBundle && e.reason === "traversal");
    assert.deepEqual([...Deno.readDirSync(dest)], []);
    const err = new Error("schema");
    await assert.rejects(
      unpack(tgzOf([{ name: "a", content: "1" }, { name: "b", content: "2" }]), dest, {
        content: (c) => {
          if (c === "b") throw err;
        },
      }),
      (e) => e === err,
    );
    assert.deepEqual([...Deno.readDirSync(dest)], []);
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["d"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
