import assert from "node:assert/strict";
import fs from "node:fs";
import { join } from "node:path";
import {
  bindDistro,
  BindingRefused,
  bindScratch,
  checkBinding,
  decodeStaged,
  encodeStaged,
  type StagedRecord,
  StagedRecordInvalid,
} from "./staged.ts";

const UUID = "4f3c8bf7-1959-47b4-8811-62b17bbddaf4";

async function hex(data: Uint8Array<ArrayBuffer>): Promise<string> {
  const d = new Uint8Array(await crypto.subtle.digest("SHA-256", data));
  return [...d].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("staging binds an image without a manifest unhashed, and one whose manifest matches with its digest", () =>
  withDir(async (dir) => {
    const image = join(dir, "distro.erofs");
    const data = new Uint8Array(4096).fill(3);
    await Deno.writeFile(image, data);
    const plain = await bindDistro(image, "erofs", UUID);
    assert.equal(plain.sha256, null);
    assert.equal(plain.size, "4096");
    await Deno.writeTextFile(
      `${image}.manifest.json`,
      JSON.stringify({ name: "distro.erofs", sha256: await hex(data), uuid: UUID }),
    );
    assert.equal((await bindDistro(image, "erofs", UUID)).sha256, await hex(data));
  }));

Deno.test("staging refuses manifests that name another image, digest or identity, and images no launch could attach", () =>
  withDir(async (dir) => {
    const image = join(dir, "distro.erofs");
    const data = new Uint8Array(4096).fill(3);
    await Deno.writeFile(image, data);
    const manifest = (m: object) => Deno.writeTextFile(`${image}.manifest.json`, JSON.stringify(m));
    await manifest({ name: "other.erofs", sha256: await hex(data) });
    await assert.rejects(bindDistro(image, "erofs", UUID), /names image "other.erofs"/);
    await manifest({ name: "distro.erofs", sha256: "0".repeat(64) });
    await assert.rejects(bindDistro(image, "erofs", UUID), /names digest/);
    await manifest({ name: "distro.erofs", sha256: await hex(data), uuid: "11111111-2222-4333-8444-555555555555" });
    await assert.rejects(bindDistro(image, "erofs", UUID), /names identity/);
    await Deno.remove(`${image}.manifest.json`);
    await assert.rejects(bindDistro(image, "erofs", "not-a-uuid"), BindingRefused);
    await assert.rejects(bindDistro("relative.erofs", "erofs", UUID), /not an absolute path/);
    await assert.rejects(bindDistro(dir, "erofs", UUID), /not a regular file/);
    await Deno.writeFile(join(dir, "empty"), new Uint8Array(0));
    assert.throws(() => bindScratch(join(dir, "empty")), /empty/);
  }));

Deno.test("checkBinding() holds for the staged file and refuses one changed in place or replaced", () =>
  withDir(async (dir) => {
    const p = join(dir, "scratch.ext4");
    await Deno.writeFile(p, new Uint8Array(8192));
    const b = bindScratch(p);
    let fd = fs.openSync(p, "r");
    checkBinding(fd, p, b);
    fs.closeSync(fd);
    fs.writeSync(fd = fs.openSync(p, "r+"), new Uint8Array([1]), 0, 1, 100);
    // File times tick with the kernel's coarse clock (a jiffy, ~4 ms): a write in the same tick as the binding's stat
    // keeps mtime and ctime, so the test moves mtime as any later write would (this failed the suite once on load).
    fs.futimesSync(fd, 1, 1);
    assert.throws(() => checkBinding(fd, p, b), /changed/);
    fs.closeSync(fd);
    const b2 = bindScratch(p);
    await Deno.writeFile(`${p}.new`, new Uint8Array(8192));
    await Deno.rename(`${p}.new`, p);
    fd = fs.openSync(p, "r");
    assert.throws(() => checkBinding(fd, p, b2), /ino .*replaced/);
    fs.closeSync(fd);
  }));

Deno.test("the staged record round-trips, and a reader refuses another format, missing or extra members, bad bindings", () =>
  withDir(async (dir) => {
    const image = join(dir, "d.gpt");
    await Deno.writeFile(image, new Uint8Array(1024));
    const rec: StagedRecord = {
      format: 1,
      distro: { path: image, binding: await bindDistro(image, "gpt", UUID) },
      scratch: null,
    };
    assert.deepEqual(decodeStaged(encodeStaged(rec)), rec);
    const o = JSON.parse(encodeStaged(rec));
    const bad = (mut: (x: Record<string, unknown>) => void) => {
      const c = structuredClone(o);
      mut(c);
      return JSON.stringify(c);
    };
    const rows: [string, string][] = [
      ["format 2", bad((c) => c.format = 2)],
      ["missing scratch", bad((c) => delete c.scratch)],
      ["extra member", bad((c) => c.more = 1)],
      ["relative path", bad((c) => (c.distro as { path: string }).path = "d.gpt")],
      ["binding format", bad((c) => (c.distro as { binding: { format: string } }).binding.format = "qcow2")],
      ["binding size", bad((c) => (c.distro as { binding: { size: unknown } }).binding.size = 1024)],
      ["binding extra", bad((c) => (c.distro as { binding: Record<string, unknown> }).binding.x = "1")],
      ["scratch binding", bad((c) => c.scratch = { path: "/s", binding: {} })],
      ["not JSON", "{"],
    ];
    for (const [what, text] of rows) assert.throws(() => decodeStaged(text), StagedRecordInvalid, what);
  }));
