import assert from "node:assert/strict";
import { join } from "node:path";
import { ServerTimeAhead, ServerTimeRegressed } from "./errors.ts";
import { openTest, tempDataDir, testClock } from "./journal_testing.ts";
import { JOURNAL_FILE } from "./journal.ts";
import {
  advanceMark,
  MARK_PERSIST_STEP_MS,
  MAX_FORWARD_SKEW_MS,
  MAX_SERVER_TIME_MS,
  WELCOME_MAX_REGRESSION_MS,
} from "./time_mark.ts";
import { readIdentity } from "./identity_file.ts";
import { inspectJournal } from "./inspect.ts";

const MIN = 60_000;
const MARK = 1_800_000_000_000;
const DAY = 24 * 60 * MIN;

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
          () => advanceMark(MARK, r.t, r.source, MARK),
          (e: unknown) => e instanceof ServerTimeRegressed && e.reason === "server-time-regressed",
        );
      } else assert.equal(advanceMark(MARK, r.t, r.source, MARK), r.want);
    });
  }
});

Deno.test("advanceMark(): a time more than 24 hours ahead of the later of mark and host clock is refused from any source", async (t) => {
  assert.equal(MAX_FORWARD_SKEW_MS, DAY);
  const rows: { name: string; mark: number; local: number; t: number; want: number | "ahead" }[] = [
    { name: "exactly 24 hours past the mark is taken", mark: MARK, local: MARK - DAY, t: MARK + DAY, want: MARK + DAY },
    { name: "24 hours and 1 ms past both is refused", mark: MARK, local: MARK, t: MARK + DAY + 1, want: "ahead" },
    {
      name: "the host clock ahead of the mark widens the limit",
      mark: MARK,
      local: MARK + DAY,
      t: MARK + 2 * DAY,
      want: MARK + 2 * DAY,
    },
    {
      name: "a fresh mark (0) is bounded by the host clock",
      mark: 0,
      local: MARK,
      t: Date.UTC(2200, 0, 1),
      want: "ahead",
    },
    { name: "9e15 ms is refused", mark: MARK, local: 9e15, t: 9e15, want: "ahead" },
    {
      name: "past year 9999 is refused even with such a host clock",
      mark: 0,
      local: MAX_SERVER_TIME_MS,
      t: MAX_SERVER_TIME_MS + 1,
      want: "ahead",
    },
    { name: "NaN is refused", mark: MARK, local: MARK, t: NaN, want: "ahead" },
    { name: "a negative time is refused", mark: MARK, local: MARK, t: -1, want: "ahead" },
  ];
  for (const r of rows) {
    for (const source of ["welcome", "heartbeat"] as const) {
      await t.step(`${r.name} (${source})`, () => {
        if (r.want === "ahead") {
          assert.throws(
            () => advanceMark(r.mark, r.t, source, r.local),
            (e: unknown) =>
              e instanceof ServerTimeAhead && e.reason === "server-time-ahead" && /9999|ahead/.test(e.message),
          );
        } else assert.equal(advanceMark(r.mark, r.t, source, r.local), r.want);
      });
    }
  }
});

Deno.test("heartbeat marks are coalesced: written once a step past the written mark, and on close", async () => {
  await using tmp = await tempDataDir();
  const clock = testClock(MARK);
  const j = await openTest(tmp.dir, clock);
  await j.observeServerTime(MARK, "welcome");
  const written = async () => (await readIdentity(tmp.dir))?.server_time_mark;
  assert.equal(await written(), MARK, "a Welcome that moves the mark is written at once");
  for (let i = 1; i <= 100; i++) await j.observeServerTime(MARK + i * 10, "heartbeat");
  assert.equal(await written(), MARK, "100 small heartbeat moves wrote nothing");
  assert.equal((await j.meta()).serverTimeMark, MARK + 1000, "meta() reports the mark held in memory");
  await j.observeServerTime(MARK + MARK_PERSIST_STEP_MS, "heartbeat");
  assert.equal(await written(), MARK + MARK_PERSIST_STEP_MS, "a step past the written mark is written");
  await j.observeServerTime(MARK + MARK_PERSIST_STEP_MS + 5, "heartbeat");
  await j.close();
  assert.equal(await written(), MARK + MARK_PERSIST_STEP_MS + 5, "close writes the mark held in memory");
});

Deno.test("resetTimeMark() lowers a wrong mark in the journal and identity.json, and honest Welcomes are taken again", async () => {
  await using tmp = await tempDataDir();
  const clock = testClock(MARK);
  const j = await openTest(tmp.dir, clock);
  await j.observeServerTime(MARK + DAY, "welcome"); // a mark a day ahead (the most one Welcome can do)
  await clock.advance(DAY);
  await j.observeServerTime(MARK + 2 * DAY, "welcome");
  // The host's clock was set back a day: what it reads now is MARK (FakeClock only moves forward, so the value is
  // given as the reset's argument, which is where the journal takes it from).
  await assert.rejects(() => j.observeServerTime(MARK, "welcome"), ServerTimeRegressed);
  assert.equal(await j.resetTimeMark(MARK), MARK + 2 * DAY);
  assert.equal((await readIdentity(tmp.dir))?.server_time_mark, MARK);
  assert.equal(await j.observeServerTime(MARK + 1000, "welcome"), MARK + 1000);
  await j.close();
});

Deno.test("the server time mark is journaled, and a lost journal does not reset it (identity.json mirror)", async () => {
  await using tmp = await tempDataDir();
  const clock = testClock(MARK);
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

Deno.test("journal inspect still works on a mark an older build let past year 9999 (shown as milliseconds)", async () => {
  await using tmp = await tempDataDir();
  const j = await openTest(tmp.dir, testClock(MARK));
  await j.resetTimeMark(9e15);
  await j.close();
  const v = await inspectJournal(tmp.dir);
  assert.equal((v.meta as Record<string, unknown>).server_time_mark, 9e15);
});
