import assert from "node:assert/strict";
import { JournalLocked } from "./errors.ts";
import { LOCK_FILE, lockHolder } from "./lock.ts";
import { openTest, tempDataDir, testClock } from "./journal_testing.ts";

Deno.test("a second opener of the same data_dir is refused with a message naming the holder", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock(), { incarnation: "inc-holder" });
  await assert.rejects(
    () => openTest(tmp.dir, testClock()),
    (e: unknown) =>
      e instanceof JournalLocked && e.reason === "journal-locked" && e.message.includes(`pid ${Deno.pid}`) &&
      e.message.includes("inc-holder"),
  );
  assert.match(lockHolder(tmp.dir) ?? "", /inc-holder/);
  await j.close();
  assert.equal(lockHolder(tmp.dir), null);
  const again = await openTest(tmp.dir, testClock());
  await again.close();
});

Deno.test("a second process is refused while the first holds the journal; the lock dies with its holder", async () => {
  await using tmp = await tempDataDir();
  const holder = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `import { Journal } from ${JSON.stringify(new URL("./journal.ts", import.meta.url).href)};
       await Journal.open({ dataDir: ${JSON.stringify(tmp.dir)}, bootId: "b", incarnation: "inc-child" });
       console.log("held");
       await new Promise(() => setInterval(() => {}, 1000));`,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = holder.stdout.getReader();
  const first = await reader.read();
  assert.match(new TextDecoder().decode(first.value), /held/);
  await assert.rejects(
    () => openTest(tmp.dir, testClock()),
    (e: unknown) => e instanceof JournalLocked && e.message.includes(`pid ${holder.pid}`),
  );
  holder.kill("SIGKILL");
  await holder.status;
  reader.releaseLock();
  await holder.stdout.cancel();
  const j = await openTest(tmp.dir, testClock());
  await j.close();
});

Deno.test("a new holder's record replaces a longer one left by an earlier holder, with nothing of it after its end", async () => {
  await using tmp = await tempDataDir();
  const path = `${tmp.dir}/${LOCK_FILE}`;
  const stale = JSON.stringify({ pid: 1, incarnation: "x".repeat(500), since: "then" }) + "\n";
  await Deno.writeTextFile(path, stale);
  const j = await openTest(tmp.dir, testClock(), { incarnation: "inc-new" });
  try {
    const text = await Deno.readTextFile(path);
    assert.ok(text.length < stale.length, `the record is ${text.length} bytes, the stale one ${stale.length}`);
    assert.ok(
      text.endsWith("}\n") && text.indexOf("\n") === text.length - 1,
      `one record line: ${JSON.stringify(text)}`,
    );
    const holder = JSON.parse(text) as { pid: number; incarnation: string };
    assert.deepEqual([holder.pid, holder.incarnation], [Deno.pid, "inc-new"]);
  } finally {
    await j.close();
  }
});
