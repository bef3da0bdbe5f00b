import assert from "node:assert/strict";
import { createLogger } from "../core/log/mod.ts";
import { OrphanReaper, parseProcStat, type ProcStat } from "./reaper.ts";

const log = createLogger({ level: "silent" });

Deno.test("parseProcStat() reads the state and parent of /proc/PID/stat, whatever the command holds", () => {
  assert.deepEqual(parseProcStat("42 (sh) Z 1 42 42 0 -1"), { pid: 42, state: "Z", ppid: 1 });
  assert.deepEqual(parseProcStat("7 (a) b) (c) S 3 7 7"), { pid: 7, state: "S", ppid: 3 });
  assert.equal(parseProcStat("garbage"), null);
  assert.equal(parseProcStat("9 (x) R"), null);
});

Deno.test("a sweep collects only zombie children it did not spawn, each by its ID", async () => {
  const procs: ProcStat[] = [
    { pid: 10, state: "Z", ppid: 1 }, // adopted orphan: collected
    { pid: 11, state: "Z", ppid: 1 }, // the worker: Deno's own wait takes it
    { pid: 12, state: "S", ppid: 1 }, // alive: never waited for
    { pid: 13, state: "Z", ppid: 5 }, // another process's child
    { pid: 14, state: "Z", ppid: 1 }, // a zombie the wait cannot take (already gone): skipped
  ];
  const waited: number[] = [];
  const r = new OrphanReaper({
    parent: 1,
    own: () => new Set([11]),
    waitpid: (pid) => {
      waited.push(pid);
      return pid === 14 ? null : 0;
    },
    list: () => Promise.resolve(procs),
    log,
  });
  assert.deepEqual(await r.sweep(), [10]);
  assert.deepEqual(waited, [10, 14]);
  assert.equal(r.reaped, 1);
});

Deno.test("a kick during a sweep runs one more pass after it (coalesced SIGCHLDs lose no orphan)", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let passes = 0;
  const r = new OrphanReaper({
    parent: 1,
    own: () => new Set(),
    waitpid: () => 0,
    list: async () => {
      passes++;
      if (passes === 1) await gate;
      return [];
    },
    log,
  });
  const first = r.kick();
  const second = r.kick();
  const third = r.kick();
  release();
  await Promise.all([first, second, third]);
  assert.equal(passes, 2);
});

Deno.test("a failing pass is logged and the reaper goes on (PID 1 must outlive it)", async () => {
  let n = 0;
  const r = new OrphanReaper({
    parent: 1,
    own: () => new Set(),
    waitpid: () => 0,
    list: () => (n++ === 0 ? Promise.reject(new Error("proc unreadable")) : Promise.resolve([])),
    log,
  });
  await r.kick();
  await r.kick();
  assert.equal(n, 2);
});

Deno.test({
  name:
    "a real subreaper collects an adopted orphan through libc's waitpid, and its own child's status still reaches Deno",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "bcd-reaper-" });
    try {
      const fifo = `${dir}/fifo`;
      const mk = await new Deno.Command("mkfifo", { args: [fifo] }).output();
      assert.ok(mk.success);
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--quiet", "--allow-all", new URL("./_reaper_probe_main.ts", import.meta.url).pathname, fifo],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const err = new TextDecoder().decode(out.stderr);
      assert.ok(out.success, err);
      const r = JSON.parse(new TextDecoder().decode(out.stdout));
      assert.deepEqual(r.collected, [r.orphan], "the orphan, and nothing else");
      assert.equal(r.after, "gone", "no zombie remains");
      assert.equal(r.ownCode, 7, "the status of the child Deno spawned was not taken");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
