import assert from "node:assert/strict";
import { FileVolumeStore, punchHoles } from "./file_store.ts";
import { volumeStoreContract } from "../../core/volumes/store_contract_testing.ts";

async function _write(path: string, bytes: number): Promise<void> {
  using f = await Deno.open(path, { write: true });
  const block = new Uint8Array(64 * 1024).fill(0xa5);
  for (let n = 0; n < bytes; n += block.length) await f.write(block.subarray(0, Math.min(block.length, bytes - n)));
  await f.sync();
}

Deno.test("FileVolumeStore keeps the volume store contract on a real filesystem", async (t) => {
  const dirs: string[] = [];
  try {
    await volumeStoreContract(t, async () => {
      const d = await Deno.makeTempDir({ prefix: "bcd-volumes-" });
      dirs.push(d);
      const store = new FileVolumeStore({ dir: `${d}/volumes` });
      return { store, write: (id, bytes) => _write(store.rawPath(id), bytes) };
    });
  } finally {
    for (const d of dirs) await Deno.remove(d, { recursive: true });
  }
});

Deno.test("FileVolumeStore: volumes are 0600 raw files with their serial in <id>.json, in a 0700 directory", async () => {
  const d = await Deno.makeTempDir({ prefix: "bcd-volumes-" });
  try {
    const store = new FileVolumeStore({ dir: `${d}/volumes` });
    await store.create("v1", "disk-a", 1 << 20);
    assert.equal((await Deno.stat(`${d}/volumes`)).mode! & 0o777, 0o700);
    assert.equal((await Deno.stat(`${d}/volumes/v1.raw`)).mode! & 0o777, 0o600);
    assert.deepEqual(JSON.parse(await Deno.readTextFile(`${d}/volumes/v1.json`)), { serial: "disk-a" });
    assert.deepEqual((await Array.fromAsync(Deno.readDir(`${d}/volumes`))).map((e) => e.name).sort(), [
      "v1.json",
      "v1.raw",
    ]);
  } finally {
    await Deno.remove(d, { recursive: true });
  }
});

Deno.test("FileVolumeStore.destroy punches the blocks out before the unlink (a holder of the file sees them gone)", async () => {
  const d = await Deno.makeTempDir({ prefix: "bcd-volumes-" });
  try {
    const punched: string[] = [];
    const store = new FileVolumeStore({
      dir: `${d}/volumes`,
      punch: async (p, n) => {
        punched.push(p);
        await punchHoles(p, n);
      },
    });
    await store.create("v", "s", 8 << 20);
    await _write(store.rawPath("v"), 4 << 20);
    using held = await Deno.open(store.rawPath("v"), { read: true });
    assert.ok(((await held.stat()).blocks ?? 0) * 512 >= 4 << 20);
    await store.destroy("v");
    assert.deepEqual(punched, [`${d}/volumes/v.raw`]);
    assert.equal((await held.stat()).blocks, 0);
    assert.equal((await held.stat()).size, 8 << 20, "punching keeps the size");
    await assert.rejects(Deno.lstat(store.rawPath("v")), Deno.errors.NotFound);
    await assert.rejects(Deno.lstat(`${d}/volumes/v.json`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(d, { recursive: true });
  }
});

Deno.test("FileVolumeStore refuses a link in a volume's place and never follows it", async () => {
  const d = await Deno.makeTempDir({ prefix: "bcd-volumes-" });
  try {
    const store = new FileVolumeStore({ dir: `${d}/volumes` });
    await Deno.mkdir(`${d}/volumes`);
    await Deno.writeTextFile(`${d}/victim`, "keep");
    await Deno.symlink(`${d}/victim`, `${d}/volumes/v.raw`);
    assert.deepEqual(await store.list(), []);
    await assert.rejects(store.grow("v", 1 << 20), /not a plain file/);
    await assert.rejects(store.destroy("v"), /not a plain file/);
    await assert.rejects(store.create("v", "s", 1 << 20), Deno.errors.AlreadyExists);
    assert.equal(await Deno.readTextFile(`${d}/victim`), "keep");
    assert.throws(() => store.rawPath("../x"), TypeError);
  } finally {
    await Deno.remove(d, { recursive: true });
  }
});
