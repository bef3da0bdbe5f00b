import assert from "node:assert/strict";
import { tarGz } from "./tar_gz.ts";

async function haveTar(): Promise<boolean> {
  try {
    return (await new Deno.Command("tar", { args: ["--version"], stdout: "null", stderr: "null" }).output()).success;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}
const TAR = await haveTar();
if (!TAR) console.warn("skipping the real-tar check: GNU tar is not installed");

Deno.test({
  name: "tarGz() writes an archive GNU tar lists and extracts byte for byte",
  ignore: !TAR,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      const big = new Uint8Array(70_000).map((_, i) => (i * 7) & 0xff);
      const bytes = await tarGz([
        { name: "daemon.log", data: new TextEncoder().encode('{"msg":"hello"}\n'), mtimeMs: 1_700_000_000_000 },
        { name: "empty.txt", data: new Uint8Array(), mtimeMs: 0 },
        { name: "sub/blob.bin", data: big, mtimeMs: 1_700_000_000_000 },
      ]);
      await Deno.writeFile(`${dir}/a.tar.gz`, bytes);
      const list = await new Deno.Command("tar", { args: ["-tzvf", `${dir}/a.tar.gz`] }).output();
      assert.ok(list.success, new TextDecoder().decode(list.stderr));
      const names = new TextDecoder().decode(list.stdout).trim().split("\n").map((l) => l.split(/\s+/).at(-1));
      assert.deepEqual(names, ["daemon.log", "empty.txt", "sub/blob.bin"]);
      await Deno.mkdir(`${dir}/x`);
      const x = await new Deno.Command("tar", { args: ["-xzf", `${dir}/a.tar.gz`, "-C", `${dir}/x`] }).output();
      assert.ok(x.success, new TextDecoder().decode(x.stderr));
      assert.equal(await Deno.readTextFile(`${dir}/x/daemon.log`), '{"msg":"hello"}\n');
      assert.deepEqual(await Deno.readFile(`${dir}/x/sub/blob.bin`), big);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("tarGz() refuses names that escape or do not fit", async () => {
  for (const name of ["/etc/passwd", "../x", "a/../../b", "", "n".repeat(101)]) {
    await assert.rejects(tarGz([{ name, data: new Uint8Array(), mtimeMs: 0 }]), RangeError, name);
  }
});
