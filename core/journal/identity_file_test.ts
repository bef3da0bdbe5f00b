import assert from "node:assert/strict";
import { join } from "node:path";
import { IDENTITY_FILE, IdentityFileError, MAX_IDENTITY_BYTES, readIdentity, updateIdentity } from "./identity_file.ts";
import { tempDataDir } from "./journal_testing.ts";

Deno.test("concurrent identity.json updates keep every writer's keys", async () => {
  await using tmp = await tempDataDir();
  await Promise.all([
    updateIdentity(tmp.dir, { cert_chain: "pem" }),
    updateIdentity(tmp.dir, { server_time_mark: 5 }),
    updateIdentity(tmp.dir, { trust_bundle: { roots: [] } }),
  ]);
  assert.deepEqual(await readIdentity(tmp.dir), {
    cert_chain: "pem",
    server_time_mark: 5,
    trust_bundle: { roots: [] },
  });
});

Deno.test("identity.json that is not a JSON object, or too large, is refused before use", async (t) => {
  await using tmp = await tempDataDir();
  const path = join(tmp.dir, IDENTITY_FILE);
  assert.equal(await readIdentity(tmp.dir), null, "absent reads as null");
  for (const [name, text] of [["not JSON", "{"], ["an array", "[]"], ["a string", '"x"']]) {
    await t.step(name!, async () => {
      await Deno.writeTextFile(path, text!);
      await assert.rejects(() => readIdentity(tmp.dir), IdentityFileError);
    });
  }
  await t.step("over the size bound", async () => {
    await Deno.writeTextFile(path, " ".repeat(MAX_IDENTITY_BYTES + 1));
    await assert.rejects(() => readIdentity(tmp.dir), IdentityFileError);
  });
});
