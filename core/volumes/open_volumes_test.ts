import assert from "node:assert/strict";
import { OpenVolumes } from "./open_volumes.ts";

const rw = (volumeId: string) => ({ volumeId, readOnly: false });
const ro = (volumeId: string) => ({ volumeId, readOnly: true });

Deno.test("one writer: the seed's cases row by row", async (t) => {
  const rows: [string, ReturnType<typeof rw>[], ReturnType<typeof rw>[], RegExp | undefined][] = [
    ["a writer beside a running writer is refused", [rw("v")], [rw("v")], /open read-write in instance a/],
    ["a reader beside a running writer is refused", [rw("v")], [ro("v")], /open read-write in instance a/],
    ["a writer beside readers is refused", [ro("v")], [rw("v")], /open read-only in instance a; a writer needs it/],
    ["readers share a volume", [ro("v")], [ro("v")], undefined],
    ["other volumes do not conflict", [rw("v")], [rw("w")], undefined],
  ];
  for (const [name, held, wanted, refused] of rows) {
    await t.step(name, () => {
      const o = new OpenVolumes();
      o.reset([{ id: "a", volumes: held }]);
      const why = o.conflict("b", wanted);
      if (refused) assert.match(why ?? "", refused);
      else assert.equal(why, undefined);
    });
  }
});

Deno.test("OpenVolumes: what an instance holds never conflicts with itself; a stop lets go; a failed stop does not", () => {
  const o = new OpenVolumes();
  o.open("a", [rw("v")]);
  assert.equal(o.conflict("a", [rw("v")]), undefined);
  assert.ok(o.isOpen("v"));
  assert.deepEqual(o.holders("v"), ["a"]);
  // A stop that failed never calls close: the second writer stays out.
  assert.match(o.conflict("b", [rw("v")]) ?? "", /one writer/);
  o.close("a");
  assert.equal(o.isOpen("v"), false);
  assert.equal(o.conflict("b", [rw("v")]), undefined);
});
