import assert from "node:assert/strict";
import * as nodePath from "node:path";
import { fileURLToPath } from "node:url";
import { basename, dirname, fromFileUrl, join, normalize } from "./path.ts";

const SAMPLES = [
  "",
  ".",
  "..",
  "/",
  "//",
  "///",
  "a",
  "a/",
  "a//",
  "/a",
  "//a",
  "/a/",
  "a/b",
  "a/b/",
  "/a/b/c",
  "/a//b///c//",
  "a/./b",
  "a/../b",
  "../a",
  "../../a/../..",
  "/..",
  "/../a",
  "/a/../..",
  "./a",
  "./",
  "a/..",
  "a/../",
  "/var/lib/bcd/journal.db",
  "journal.db-wal",
  ".hidden",
  "/a/.b",
  "a/.../b",
  "..a/b..",
];

Deno.test("normalize, dirname and basename give node:path's POSIX results on a table of edge cases", () => {
  for (const p of SAMPLES) {
    assert.equal(normalize(p), nodePath.posix.normalize(p), `normalize(${JSON.stringify(p)})`);
    assert.equal(dirname(p), nodePath.posix.dirname(p), `dirname(${JSON.stringify(p)})`);
    assert.equal(basename(p), nodePath.posix.basename(p), `basename(${JSON.stringify(p)})`);
  }
});

Deno.test("join gives node:path's POSIX results for every pair and triple of the table", () => {
  assert.equal(join(), nodePath.posix.join());
  for (const a of SAMPLES) {
    assert.equal(join(a), nodePath.posix.join(a));
    for (const b of SAMPLES) {
      assert.equal(join(a, b), nodePath.posix.join(a, b), `join(${JSON.stringify(a)}, ${JSON.stringify(b)})`);
      for (const c of ["", "x", "..", "/y/"]) assert.equal(join(a, b, c), nodePath.posix.join(a, b, c));
    }
  }
});

Deno.test("normalize, join and dirname agree with node:path on 20,000 generated paths of '/', '.', '..' and names", () => {
  let seed = 0x2545f491;
  const next = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  const atoms = ["/", "/", "a", "bc", ".", "..", "//", "./", "../"];
  for (let i = 0; i < 20_000; i++) {
    let p = "";
    const n = Math.floor(next() * 8);
    for (let j = 0; j < n; j++) p += atoms[Math.floor(next() * atoms.length)];
    assert.equal(normalize(p), nodePath.posix.normalize(p), `normalize(${JSON.stringify(p)})`);
    assert.equal(dirname(p), nodePath.posix.dirname(p), `dirname(${JSON.stringify(p)})`);
    assert.equal(basename(p), nodePath.posix.basename(p), `basename(${JSON.stringify(p)})`);
    assert.equal(join(p, "x", p), nodePath.posix.join(p, "x", p), `join(${JSON.stringify(p)}, "x", ...)`);
  }
});

Deno.test("fromFileUrl gives node:url's fileURLToPath results and refuses what it refuses", () => {
  const good = [
    "file:///",
    "file:///work/main/deno.json",
    "file:///a%20b/c%C3%A9",
    "file://localhost/etc/bcd",
    "file:///a/./b/../c",
    "file:///x%25y",
  ];
  for (const u of good) {
    assert.equal(fromFileUrl(u), fileURLToPath(u), u);
    assert.equal(fromFileUrl(new URL(u)), fileURLToPath(new URL(u)), u);
  }
  for (const u of ["http://example.com/a", "file://host/a", "file:///a%2fb", "file:///a%2Fb"]) {
    assert.throws(() => fileURLToPath(u), TypeError, u);
    assert.throws(() => fromFileUrl(u), TypeError, u);
  }
});
