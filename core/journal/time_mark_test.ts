import assert from "node:assert/strict";
import { join } from "node:path";
import { ServerTimeRegressed } from "./errors.ts";
import { openTest, tempDataDir, TestClock } from "./_testing.ts";
import { JOURNAL_FILE } from "./journal.ts";
import { advanceMark, WELCOME_MAX_REGRESSION_MS } from "./time_mark.ts";

const MIN = 60_000;
const MARK = 1_800_000_000_000;

Deno.test("advanceMark(): the mark only moves forward; a Welcome more than 5 minutes before it is refused", async (t) => {
  const rows: { name: string; t: number; source: "welcome" | "heartbeat"; want: number | "refused" }[] = [
    { name: "welcome ahead moves the mark", t: MARK + 1000, source: "welcome", want: MARK + 1000 },
    { name: "heartbeat ahead moves the mark", t: MARK + 1000, source: "heartbeat", want: MARK + 1000 },
    { name: "welcome 4 minutes behind is accepted, mark unchanged", t: MARK - 4 * MIN, source: "welcome", want: MARK },
    { name: "welcome exactly 5 minutes behind is accepted", t: MARK - 5 * MIN, source: "welcome", want: MARK },
    { name: "welcome 5 minutes and 1 ms behind is refused", t: MARK - 5 * MIN - 1, source: "welcome", want: "refused" },
    { name: "heartbeat an hour behind leaves the mark", t: MARK - 60 * MIN, source: "heartbeat", want: MARK },
  ];
  assert.equal(WELCOME_MAX_REGRESSION_MS, 5 * MIN);
  for (const r of rows) {
    await t.step(r.name, () => {
      if (r.want === "refused") {
        assert.throws(
          () => advanceMark(MARK, r.t, r.source),
          (e: unknown) => e instanceof ServerTimeRegressed && e.reason === "server-time-regressed",
        );
      } else assert.equal(advanceMark(MARK, r.t, r.source), r.want);
    });
  }
});

Deno.test("the server time mark is journaled, and a lost journal does not reset it (identity.json mirror)", async () => {
  await using tmp = await tempDataDir();
  const clock = new TestClock();
  const j = await openTest(tmp.dir, clock);
  assert.equal(await j.observeServerTime(MARK, "welcome"), MARK);
  assert.equal(await j.observeServerTime(MARK + 30_000, "heartbeat"), MARK + 30_000);
  await j.close();
  for (const s of ["", "-wal", "-shm"]) await Deno.remove(join(tmp.dir, JOURNAL_FILE + s)).catch(() => undefined);
  const j2 = await openTest(tmp.dir, clock);
  assert.equal(j2.opened.created, true, "a new journal");
  assert.equal((await j2.meta()).serverTimeMark, MARK + 30_000, "the mark came back from identity.json");
  await assert.rejects(() => j2.observeServerTime(MARK - 10 * MIN, "welcome"), ServerTimeRegressed);
  await j2.close();
});
