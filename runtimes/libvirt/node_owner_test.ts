import assert from "node:assert/strict";
import { identityOwner } from "./node_owner.ts";

Deno.test("identityOwner() is undefined until identity.json names a node, then keeps that node id", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-owner-" });
  try {
    const owner = identityOwner(dir);
    assert.equal(await owner(), undefined, "no identity.json: not joined");
    await Deno.writeTextFile(`${dir}/identity.json`, JSON.stringify({ server_time_mark: 1 }));
    assert.equal(await owner(), undefined, "no node_id yet");
    await Deno.writeTextFile(`${dir}/identity.json`, JSON.stringify({ node_id: "node a" }));
    assert.equal(await owner(), undefined, "a node id with whitespace is no owner");
    await Deno.writeTextFile(`${dir}/identity.json`, JSON.stringify({ node_id: "node-7f3a" }));
    assert.equal(await owner(), "node-7f3a");
    await Deno.writeTextFile(`${dir}/identity.json`, JSON.stringify({ node_id: "node-other" }));
    assert.equal(await owner(), "node-7f3a", "a data dir's node id is read once");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("identityOwner() never follows a link where identity.json should be", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-owner-" });
  try {
    await Deno.writeTextFile(`${dir}/elsewhere.json`, JSON.stringify({ node_id: "node-x" }));
    await Deno.symlink(`${dir}/elsewhere.json`, `${dir}/identity.json`);
    assert.equal(await identityOwner(dir)(), undefined);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
