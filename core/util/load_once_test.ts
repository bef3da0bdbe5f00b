import assert from "node:assert/strict";
import { loadOnce } from "./load_once.ts";

Deno.test("loadOnce makes its value once for every use; a failed make reaches its callers and is tried again", async () => {
  let makes = 0;
  const get = loadOnce(() => {
    makes++;
    return makes === 1 ? Promise.reject(new Error("chunk missing")) : Promise.resolve({ n: makes });
  });
  await Promise.all([
    assert.rejects(get(), /chunk missing/),
    assert.rejects(get(), /chunk missing/),
  ]);
  assert.equal(makes, 1, "callers waiting on one make share it");
  const [a, b] = await Promise.all([get(), get()]);
  assert.equal(a, b);
  assert.deepEqual(a, { n: 2 });
  assert.equal(await get(), a);
  assert.equal(makes, 2);
});
