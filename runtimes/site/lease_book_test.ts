import assert from "node:assert/strict";
import { BOOT_LEASES_FILE, type BootLeaseRecord, BootLeasesCorrupt, LeaseBook } from "./lease_book.ts";

function lease(nodeId: string, o: Partial<BootLeaseRecord> = {}): BootLeaseRecord {
  return {
    node_id: nodeId,
    macs: [],
    system_ids: [],
    kernel_sha256: "a".repeat(64),
    initrd_sha256: "b".repeat(64),
    cmdline: "console=ttyS0",
    expires_at_ms: 2000,
    source: "command",
    ...o,
  };
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-leases-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a lease is found by MAC, system id or node id until it expires, and kept across a restart", async () => {
  await withDir(async (dir) => {
    let now = 1000;
    const book = new LeaseBook(dir, () => now);
    await book.put(lease("n1", { macs: ["52:54:00:00:00:01"], system_ids: ["4c4c4544-0000-0000-0000-000000000001"] }));
    assert.equal((await book.find({ mac: "52:54:00:00:00:01" }))?.node_id, "n1");
    assert.equal((await book.find({ mac: "52:54:00:00:00:01".toUpperCase() }))?.node_id, "n1");
    assert.equal((await book.find({ systemId: "4C4C4544-0000-0000-0000-000000000001" }))?.node_id, "n1");
    assert.equal((await book.find({ nodeId: "n1" }))?.node_id, "n1");
    assert.equal(await book.find({ mac: "52:54:00:00:00:02" }), undefined);
    const restarted = new LeaseBook(dir, () => now);
    assert.equal((await restarted.find({ nodeId: "n1" }))?.node_id, "n1");
    now = 2000;
    assert.equal(await restarted.find({ nodeId: "n1" }), undefined, "expired at expires_at_ms");
    assert.equal(await restarted.remove("n1"), true);
    assert.equal(await restarted.remove("n1"), false);
    assert.deepEqual(await new LeaseBook(dir).list(), []);
  });
});

Deno.test("the spec's leases replace the spec's earlier ones and a command's lease of the same node", async () => {
  await withDir(async (dir) => {
    const book = new LeaseBook(dir, () => 0);
    await book.put(lease("cmd-only"));
    await book.put(lease("both"));
    await book.replaceFromSpec([lease("both", { cmdline: "from spec" }), lease("spec-1")]);
    await book.replaceFromSpec([lease("both", { cmdline: "from spec" })]);
    const got = (await book.list()).map((l) => [l.node_id, l.source, l.cmdline]);
    assert.deepEqual(got, [["both", "spec", "from spec"], ["cmd-only", "command", "console=ttyS0"]]);
  });
});

Deno.test("a leases file that is not one stops the start instead of dropping every lease", async () => {
  await withDir(async (dir) => {
    for (const text of ["{", '{"version": 2, "leases": []}', '{"version": 1, "leases": [{"node_id": 3}]}']) {
      await Deno.writeTextFile(`${dir}/${BOOT_LEASES_FILE}`, text);
      await assert.rejects(() => new LeaseBook(dir).load(), BootLeasesCorrupt, text);
    }
  });
});
