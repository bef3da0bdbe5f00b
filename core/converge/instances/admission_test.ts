import assert from "node:assert/strict";
import { admitStart, normalCommitmentBytes, vmmOverheadBytes } from "./admission.ts";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

Deno.test("the VMM overhead is 1/32 of the memory plus 256 MiB; huge-page domains commit only the overhead", () => {
  assert.equal(vmmOverheadBytes(4 * GiB), 128 * MiB + 256 * MiB);
  assert.equal(normalCommitmentBytes(4 * GiB, "none"), 4 * GiB + 384 * MiB);
  assert.equal(normalCommitmentBytes(4 * GiB, "2M"), 384 * MiB);
});

Deno.test("admitStart() counts MemTotal less Hugetlb less 1 GiB against committed memory, with the seed's message", async (t) => {
  const host = { memTotalBytes: 16 * GiB, hugetlbBytes: 2 * GiB };
  // left = 16 - 2 - 1 = 13 GiB before commitments.
  await t.step("fits exactly", () => {
    const need = normalCommitmentBytes(8 * GiB, "none");
    assert.deepEqual(admitStart({ memoryBytes: 8 * GiB, hugepages: "none", mems: [] }, host, 13 * GiB - need), {
      ok: true,
      bytes: need,
    });
  });
  await t.step("one byte over is refused, naming MiB needed and left", () => {
    const need = normalCommitmentBytes(8 * GiB, "none");
    const r = admitStart({ memoryBytes: 8 * GiB, hugepages: "none", mems: [] }, host, 13 * GiB - need + 1);
    assert.deepEqual(r, {
      ok: false,
      message: `ResourcesExhausted: ${need / MiB} MiB of memory needed, ${need / MiB - 1} MiB left on this host`,
    });
  });
  await t.step("huge pages: free pages on the placement's nodes, capped by host-wide free less reserved", () => {
    const hp = { ...host, pages2Mi: { free: 1000, reserved: 100, freeByNode: { 0: 600, 1: 400 } } };
    assert.equal(admitStart({ memoryBytes: 1200 * MiB, hugepages: "2M", mems: [0] }, hp, 0).ok, true);
    const r = admitStart({ memoryBytes: 1400 * MiB, hugepages: "2M", mems: [0] }, hp, 0);
    assert.deepEqual(r, {
      ok: false,
      message: "ResourcesExhausted: 700 2 MiB huge pages needed, 600 free on this host",
    });
    const all = admitStart({ memoryBytes: 1900 * MiB, hugepages: "2M", mems: [0, 1] }, hp, 0);
    assert.deepEqual(all, {
      ok: false,
      message: "ResourcesExhausted: 950 2 MiB huge pages needed, 900 free on this host",
    });
  });
});
