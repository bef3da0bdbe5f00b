import assert from "node:assert/strict";
import { inclusionProof, leafHash, merkleRoot, verifyInclusion } from "./merkle.ts";

Deno.test("every leaf of trees of 1 to 9 leaves is proven, and only at its own index", async () => {
  for (let n = 1; n <= 9; n++) {
    const leaves = await Promise.all(Array.from({ length: n }, (_, i) => leafHash(`node-${i}`, "gpu.reset")));
    const root = await merkleRoot(leaves);
    for (let i = 0; i < n; i++) {
      const path = await inclusionProof(leaves, i);
      assert.equal(await verifyInclusion(leaves[i]!, i, n, path, root), true, `n=${n} i=${i}`);
      if (n > 1) assert.equal(await verifyInclusion(leaves[i]!, (i + 1) % n, n, path, root), false, `n=${n} i=${i}`);
      const other = await leafHash(`node-${i}`, "node.reboot");
      assert.equal(await verifyInclusion(other, i, n, path, root), false);
    }
  }
});

Deno.test("verifyInclusion() refuses an index past the size and over-long paths", async () => {
  const leaves = await Promise.all([0, 1, 2].map((i) => leafHash(`n${i}`, "k")));
  const root = await merkleRoot(leaves);
  const path = await inclusionProof(leaves, 2);
  assert.equal(await verifyInclusion(leaves[2]!, 3, 3, path, root), false);
  assert.equal(await verifyInclusion(leaves[2]!, 2, 3, [...path, path[0]!], root), false);
  assert.equal(await verifyInclusion(leaves[2]!, 2, 4, path, root), false);
});

Deno.test("a leaf hash differs from an interior node over the same bytes", async () => {
  assert.notDeepEqual(await leafHash("a", "b"), await leafHash("ab", ""));
});
