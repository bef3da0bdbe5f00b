import assert from "node:assert/strict";
import { join } from "node:path";
import { BOOT_ID_PATH, readBootId } from "./boot_id.ts";
import { tempDataDir } from "./journal_testing.ts";

Deno.test("readBootId() reads the kernel's boot id, or an injected file", async (t) => {
  await t.step("the kernel's", async () => {
    let real: string | null = null;
    try {
      real = (await Deno.readTextFile(BOOT_ID_PATH)).trim();
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
      console.log(`skipping the kernel step: ${BOOT_ID_PATH} is absent on this machine`);
    }
    if (real !== null) assert.equal(await readBootId(), real);
  });
  await using tmp = await tempDataDir();
  await t.step("an injected one, trimmed", async () => {
    await Deno.writeTextFile(join(tmp.dir, "b"), "  boot-42\n");
    assert.equal(await readBootId(join(tmp.dir, "b")), "boot-42");
  });
  await t.step("empty and oversized files are refused", async () => {
    await Deno.writeTextFile(join(tmp.dir, "e"), "\n");
    await assert.rejects(() => readBootId(join(tmp.dir, "e")), RangeError);
    await Deno.writeTextFile(join(tmp.dir, "o"), "x".repeat(4096));
    await assert.rejects(() => readBootId(join(tmp.dir, "o")), RangeError);
  });
});
