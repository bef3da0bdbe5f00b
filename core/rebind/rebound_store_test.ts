import assert from "node:assert/strict";
import { REBOUND_FILE, ReboundFile, ReboundFileCorrupt } from "./rebound_store.ts";

Deno.test("ReboundFile keeps instances-rebound.json: none is empty, a save round-trips, a corrupt file is refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-rebound-" });
  try {
    const f = new ReboundFile(dir);
    assert.deepEqual(await f.load(), {});
    await f.save({ "i-1": "ref-1" });
    assert.deepEqual(await new ReboundFile(dir).load(), { "i-1": "ref-1" });
    assert.equal((await Deno.stat(`${dir}/${REBOUND_FILE}`)).mode! & 0o777, 0o600);
    await Deno.writeTextFile(`${dir}/${REBOUND_FILE}`, '{"i-1": 7}');
    await assert.rejects(f.load(), ReboundFileCorrupt);
    await Deno.writeTextFile(`${dir}/${REBOUND_FILE}`, "{");
    await assert.rejects(f.load(), ReboundFileCorrupt);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ReboundFile writes saves that overlap one at a time, in call order (two rebinds ending together)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-rebound-" });
  try {
    const f = new ReboundFile(dir);
    await Promise.all([f.save({ "i-1": "ref-1" }), f.save({ "i-1": "ref-1", "i-2": "ref-2" })]);
    assert.deepEqual(await new ReboundFile(dir).load(), { "i-1": "ref-1", "i-2": "ref-2" });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
