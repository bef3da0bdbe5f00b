import assert from "node:assert/strict";
import { LANE_LIMITS, type LaneJob, LanePool } from "./lanes.ts";
import { ResourceLocks } from "./locks.ts";

const tick = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setTimeout(r, 0));
};

/** A job that records its start and waits until the test lets it finish. */
function gatedJob(id: string, log: string[], resources: string[] = []) {
  let open!: () => void;
  const gate = new Promise<void>((r) => open = r);
  const job: LaneJob & { finish: () => void; dropped_: boolean } = {
    id,
    resources,
    dropped_: false,
    run: async () => {
      log.push(`start ${id}`);
      await gate;
      log.push(`end ${id}`);
    },
    dropped: () => {
      job.dropped_ = true;
      log.push(`dropped ${id}`);
      return Promise.resolve();
    },
    finish: () => open(),
  };
  return job;
}

Deno.test("the lane table: credits 8/4/2, workers 4/2/1", () => {
  assert.deepEqual(LANE_LIMITS, {
    control: { credits: 8, workers: 4 },
    provision: { credits: 4, workers: 2 },
    bulk: { credits: 2, workers: 1 },
  });
});

Deno.test("LanePool: credits bound admission and come back only when released", async () => {
  const pool = new LanePool("provision", new ResourceLocks());
  for (let i = 0; i < 4; i++) assert.equal(pool.reserveCredit(), true);
  assert.equal(pool.reserveCredit(), false);
  pool.releaseCredit();
  assert.equal(pool.freeCredits, 1);
  assert.equal(pool.reserveCredit(), true);
  await pool.stop();
});

Deno.test("LanePool: a fixed pool runs at most its workers at once, starting in submission order", async () => {
  const pool = new LanePool("control", new ResourceLocks());
  const log: string[] = [];
  const jobs = Array.from({ length: 8 }, (_, i) => gatedJob(`c${i}`, log));
  for (const j of jobs) pool.submit(j);
  await tick();
  assert.equal(pool.running, 4);
  assert.deepEqual(log, ["start c0", "start c1", "start c2", "start c3"]);
  jobs[2]!.finish();
  await tick();
  assert.deepEqual(log.slice(4), ["end c2", "start c4"]);
  for (const j of jobs) j.finish();
  await tick(20);
  assert.deepEqual(log.filter((l) => l.startsWith("start")), jobs.map((j) => `start ${j.id}`));
  await pool.stop();
});

Deno.test("LanePool: the head of a lane waiting for a lock holds back later commands of that lane", async () => {
  const locks = new ResourceLocks();
  const control = new LanePool("control", locks);
  const provision = new LanePool("provision", locks);
  const log: string[] = [];
  const diag = gatedJob("dcgm", log, ["gpu:GPU-1"]);
  provision.submit(diag);
  await tick();
  const reset = gatedJob("reset", log, ["gpu:GPU-1"]);
  const inv = gatedJob("inventory", log);
  control.submit(reset);
  control.submit(inv);
  await tick();
  assert.deepEqual(log, ["start dcgm"], "two lanes never act on one GPU at once, and order within the lane holds");
  diag.finish();
  await tick();
  assert.deepEqual(log, ["start dcgm", "end dcgm", "start reset", "start inventory"]);
  reset.finish();
  inv.finish();
  await tick();
  await control.stop();
  await provision.stop();
});

Deno.test("LanePool: cancelQueued drops a queued job and one waiting for its lock, never a running one", async () => {
  const locks = new ResourceLocks();
  const bulk = new LanePool("bulk", locks);
  const log: string[] = [];
  const a = gatedJob("a", log);
  const b = gatedJob("b", log);
  const c = gatedJob("c", log);
  bulk.submit(a);
  bulk.submit(b);
  bulk.submit(c);
  await tick();
  assert.equal(bulk.cancelQueued("a"), false, "a is running");
  assert.equal(bulk.cancelQueued("c"), true, "c is queued");
  assert.equal(bulk.cancelQueued("b"), true, "b is in the feeder, waiting for the worker");
  await tick();
  a.finish();
  await tick();
  assert.deepEqual(log, ["start a", "dropped c", "dropped b", "end a"]);
  assert.equal(bulk.cancelQueued("zzz"), false);
  await bulk.stop();
});

Deno.test("LanePool: stop waits for a running job, and its worker then ends instead of waiting for more", async () => {
  const pool = new LanePool("bulk", new ResourceLocks());
  const log: string[] = [];
  const running = gatedJob("b0", log);
  const queued = gatedJob("b1", log);
  pool.submit(running);
  pool.submit(queued);
  await tick();
  assert.deepEqual(log, ["start b0"]);
  let stopped = false;
  const stop = pool.stop().then(() => stopped = true);
  await tick();
  assert.equal(stopped, false, "the running job holds the stop");
  assert.equal(queued.dropped_, true, "a queued job is dropped at the stop");
  running.finish();
  await stop;
  assert.deepEqual(log, ["start b0", "dropped b1", "end b0"]);
});
