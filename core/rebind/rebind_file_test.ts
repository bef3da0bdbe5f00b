import assert from "node:assert/strict";
import { rebindFileDisk } from "./rebind_file.ts";
import { REBIND_ANSWER_OFFSET, REBIND_DISK_BYTES } from "./image.ts";

Deno.test("rebindFileDisk(): written new with the mode (a link left in its place is removed, never followed), the answer block read back, zeroed before it is deleted, the release first", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-rebind-file-" });
  try {
    const path = `${dir}/rebind.raw`;
    const target = `${dir}/elsewhere`;
    await Deno.writeTextFile(target, "keep");
    await Deno.symlink(target, path);
    const calls: string[] = [];
    const disk = rebindFileDisk(path, 0o600, {
      attach: () => Promise.resolve(void calls.push("attach")),
      detach: () => Promise.resolve(void calls.push("detach")),
      release: () => Promise.resolve(void calls.push("release")),
    });
    const img = new Uint8Array(REBIND_DISK_BYTES).fill(7);
    await t.step("write: a regular file of 1 MiB, 0600; the link's target untouched", async () => {
      await disk.write(img);
      const st = await Deno.lstat(path);
      assert.ok(st.isFile);
      assert.equal(st.mode! & 0o777, 0o600);
      assert.equal(st.size, REBIND_DISK_BYTES);
      assert.equal(await Deno.readTextFile(target), "keep");
    });
    await t.step("an image of another size is refused before anything is written", async () => {
      await assert.rejects(disk.write(new Uint8Array(12)), RangeError);
    });
    await t.step("answer: the last 4 KiB", async () => {
      const f = await Deno.open(path, { write: true });
      await f.seek(REBIND_ANSWER_OFFSET, Deno.SeekMode.Start);
      await f.write(new TextEncoder().encode("BCREBOUND x\n"));
      f.close();
      const b = await disk.answer();
      assert.equal(b.length, 4096);
      assert.equal(new TextDecoder().decode(b.subarray(0, 12)), "BCREBOUND x\n");
    });
    await t.step(
      "destroy: release, then the contents zeroed (seen through a descriptor held open), then unlinked",
      async () => {
        const held = await Deno.open(path, { read: true });
        await disk.destroy();
        assert.deepEqual(calls, ["release"]);
        await assert.rejects(Deno.lstat(path), Deno.errors.NotFound);
        // Read to its end through the descriptor (the stream closes it).
        const b = new Uint8Array(await new Response(held.readable).arrayBuffer());
        assert.equal(b.length, REBIND_DISK_BYTES);
        assert.ok(b.every((x) => x === 0), "nothing of the image is left in the file");
        await disk.destroy();
        assert.deepEqual(calls, ["release", "release"], "a file already gone is nothing to do");
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
