import assert from "node:assert/strict";
import { BMC_HOSTS_FILE, BmcHostBook, BmcHostsCorrupt } from "./bmc_hosts.ts";

Deno.test("BmcHostBook records each BMC host once, durable across a new book, lowercased and sorted", async () => {
  const dir = await Deno.makeTempDir();
  let now = 1000;
  const book = new BmcHostBook(dir, () => now);
  await Promise.all([book.record("BMC-2.site.example.", 443, "bmc.query"), book.record("10.0.0.5", 8443, "bmc.power")]);
  now = 2000;
  await book.record("bmc-2.site.example", 443, "bmc.boot");
  const again = new BmcHostBook(dir);
  assert.deepEqual(await again.list(), [
    { host: "10.0.0.5", port: 8443, first_seen_ms: 1000, last_seen_ms: 1000, last_kind: "bmc.power" },
    { host: "bmc-2.site.example", port: 443, first_seen_ms: 1000, last_seen_ms: 2000, last_kind: "bmc.boot" },
  ]);
  assert(await again.has("BMC-2.Site.Example"));
  assert(await again.has("[10.0.0.5]"));
  assert(!(await again.has("10.0.0.6")));
  await Deno.remove(dir, { recursive: true });
});

Deno.test("BmcHostBook refuses a file it cannot read rather than treating it as empty", async (t) => {
  const rows: [string, string][] = [["not JSON", "{"], ["another version", '{"version":2,"hosts":[]}'], [
    "an entry without a port",
    '{"version":1,"hosts":[{"host":"a"}]}',
  ]];
  for (const [name, text] of rows) {
    await t.step(name, async () => {
      const dir = await Deno.makeTempDir();
      await Deno.writeTextFile(`${dir}/${BMC_HOSTS_FILE}`, text);
      await assert.rejects(() => new BmcHostBook(dir).has("a"), BmcHostsCorrupt);
      await Deno.remove(dir, { recursive: true });
    });
  }
});
