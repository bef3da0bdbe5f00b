import assert from "node:assert/strict";
import { LogRing } from "./log_ring.ts";
import { FakeClock } from "../../../fixtures/clock/fake_clock.ts";

Deno.test("LogRing keeps the newest lines within its byte bound and filters by time", async () => {
  const clock = new FakeClock(1000);
  const ring = new LogRing(30, clock);
  ring.write("aaaaaaaaa"); // 10 bytes with the newline
  await clock.advance(1000);
  ring.write("bbbbbbbbb\n");
  await clock.advance(1000);
  ring.write("ccccccccc");
  assert.deepEqual(ring.since(0, 1000), { text: "aaaaaaaaa\nbbbbbbbbb\nccccccccc\n", truncated: false });
  ring.write("ddddddddd");
  assert.equal(ring.since(0, 1000).text, "bbbbbbbbb\nccccccccc\nddddddddd\n", "the oldest line went");
  assert.equal(ring.since(2500, 1000).text, "ccccccccc\nddddddddd\n");
  assert.deepEqual(ring.since(0, 15), { text: "ddddddddd\n", truncated: true });
});

Deno.test("LogRing.tee() writes to the ring and to the next destination", () => {
  const ring = new LogRing();
  const seen: string[] = [];
  ring.tee({ write: (l) => void seen.push(l) }).write('{"level":"info"}\n');
  assert.deepEqual(seen, ['{"level":"info"}\n']);
  assert.equal(ring.since(0, 100).text, '{"level":"info"}\n');
});
