/**
 * The worker's executions behind the session, as the seed's tests/guest_session.rs lists them, with real
 * programs (`sh`, `cat`, `yes`, `head`), frame-counted credit and one shared output pool.
 */
import assert from "node:assert/strict";
import {
  defaultRootConfig,
  encodeFrame,
  encodeHostMessage,
  encodeRootConfig,
  type HostMessage,
  Kind,
} from "../core/framing/mod.ts";
import { ExecAbandoned } from "../runtimes/guest/exec_peer.ts";
import { EXECUTING, INPUT_QUEUE_LIMIT, MAX_EXECUTIONS, OUTPUT_QUEUE_LIMIT } from "./exec_limits.ts";
import { ERRNO } from "./process_group.ts";
import { collector, exec, groupMembers, key, session, start } from "./_session_harness.ts";

const SH = "/bin/sh";
const seqText = (n: number) => Array.from({ length: n }, (_, i) => `${i + 1}\n`).join("");
const raw = (m: HostMessage) => {
  const { kind, body } = encodeHostMessage(m);
  return encodeFrame(kind, body);
};

Deno.test("three executions at once, byte-exact: output beyond a MiB, 1.5 MiB through cat, both streams of a failure", async () => {
  const x = await session();
  const big = await exec(x.c, start([SH, "-c", "seq 1 200000"]));
  const input = new Uint8Array(1536 * 1024).map((_, i) => (i * 131 + (i >> 10)) & 0xff);
  const cat = await exec(x.c, start(["/bin/cat"], { stdin: true }));
  const fail = await exec(x.c, start([SH, "-c", "echo to-out; echo to-err >&2; exit 7"]));
  await cat.peer.writeInput(input);
  await cat.peer.endInput();
  const [o1, o2, o3] = await Promise.all([big.peer.terminal, cat.peer.terminal, fail.peer.terminal]);
  assert.ok(big.out.bytes(1).length > 1024 * 1024);
  assert.equal(big.out.text(1), seqText(200000));
  assert.deepEqual(o1.status, { kind: "exit", code: 0 });
  assert.deepEqual(cat.out.bytes(1), input);
  assert.deepEqual([o2.status, o2.stdoutLost, o2.stderrLost], [{ kind: "exit", code: 0 }, false, false]);
  assert.deepEqual([fail.out.text(1), fail.out.text(2), o3.status, o3.cause], ["to-out\n", "to-err\n", {
    kind: "exit",
    code: 7,
  }, null]);
  await x.c.stop();
  assert.equal(await x.run, 0);
});

Deno.test("a stalled sink stalls only its execution; a timeout ends another in time; a ping is answered; the cancel ends it within grace", async () => {
  const x = await session();
  let release!: () => void;
  const stalled = new Promise<void>((r) => release = r);
  const stalledSink = collector();
  const stuck = await x.c.execute(key(), start(["/usr/bin/yes"], { graceMs: 300 }), (s, b) => {
    stalledSink.sink(s, b);
    return stalled;
  });
  const flowing = await exec(x.c, start([SH, "-c", "seq 1 100000"]));
  const t0 = performance.now();
  const timed = await exec(x.c, start([SH, "-c", "sleep 30"], { timeoutMs: 200, graceMs: 200 }));
  await x.c.ping();
  await flowing.peer.terminal;
  assert.equal(flowing.out.text(1), seqText(100000));
  const ot = await timed.peer.terminal;
  assert.equal(ot.cause, "timeout");
  assert.ok(performance.now() - t0 < 3000, "the timeout ended it in time");
  const c0 = performance.now();
  await stuck.cancel("cancel");
  release();
  const os = await stuck.terminal;
  assert.ok(performance.now() - c0 < 2000, "within its grace");
  assert.equal(os.cause, "cancel");
  assert.equal(os.stdoutLost, true, "its output is truncated");
  await x.c.stop();
  assert.equal(await x.run, 0);
});

Deno.test("a probe while an execution runs is refused; the timeout ends it; the probe runs after", async () => {
  const x = await session();
  const e = await exec(x.c, start([SH, "-c", "sleep 30"], { timeoutMs: 150, graceMs: 100 }));
  assert.deepEqual(await x.c.probe({ name: "echo-args", args: ["a"] }), { problem: EXECUTING });
  assert.equal((await e.peer.terminal).cause, "timeout");
  assert.deepEqual(await x.c.probe({ name: "echo-args", args: ["a"] }), { facts: [["arg0", "a"]] });
  await x.c.stop();
  assert.equal(await x.run, 0);
});

Deno.test("a full stream to the host: a cancellation still ends its program, and a stop the others", async () => {
  const x = await session();
  const execs = [];
  for (let i = 0; i < 4; i++) {
    execs.push(await exec(x.c, start(["/usr/bin/yes"], { output: { unit: "frames", size: 64 } })));
  }
  await x.c.ping();
  let unstall!: () => void;
  x.s.stall = new Promise((r) => unstall = r);
  await new Promise((r) => setTimeout(r, 200));
  assert.equal((await groupMembers(x.pids)).length, 4);
  assert.ok(
    x.worker.outbox.bytes <= OUTPUT_QUEUE_LIMIT + 4 * (64 * 1024 + 22),
    `output stops past 1 MiB queued: ${x.worker.outbox.bytes}`,
  );
  await execs[0]!.peer.cancel("cancel");
  await waitFor(async () => (await groupMembers(x.pids)).length === 3, 3000, "the cancelled program ended");
  x.s.sendRaw(encodeFrame(Kind.Stop));
  await waitFor(async () => (await groupMembers(x.pids)).length === 0, 3000, "the stop ended the others");
  unstall();
  x.s.stall = null;
  assert.equal(await x.run, 0);
});

Deno.test("two executions that write without end take turns at the stream", async () => {
  const x = await session();
  const bytes = [0, 0];
  const seen = [false, false];
  let counting = false;
  const mk = (i: number) => (_s: 1 | 2, b: Uint8Array) => {
    seen[i] = true;
    if (counting) bytes[i]! += b.length;
  };
  const st = start(["/usr/bin/yes", "a"], { chunk: 4096, output: { unit: "frames", size: 512 } });
  const a = await x.c.execute(key(), st, mk(0));
  const b = await x.c.execute(key(), { ...st, argv: ["/usr/bin/yes", "b"] }, mk(1));
  // Count once both programs run (one may start a few milliseconds after the other), over half a second.
  await waitFor(() => Promise.resolve(seen[0]! && seen[1]!), 5000, "both programs' output");
  counting = true;
  await new Promise((r) => setTimeout(r, 500));
  counting = false;
  const share = bytes[0]! / (bytes[0]! + bytes[1]!);
  assert.ok(bytes[0]! + bytes[1]! > 1024 * 1024, `output flowed: ${bytes}`);
  assert.ok(share > 0.2 && share < 0.8, `both keep their turns: ${bytes}`);
  await a.cancel();
  await b.cancel();
  await Promise.all([a.terminal, b.terminal]);
  await x.c.stop();
  assert.equal(await x.run, 0);
});

Deno.test("starts the worker refuses: beyond its limit, beyond its memory, a program it cannot find", async () => {
  const x = await session();
  const running = [];
  for (let i = 0; i < MAX_EXECUTIONS; i++) running.push(await exec(x.c, start([SH, "-c", "sleep 30"])));
  const over = await exec(x.c, start(["/bin/true"]));
  assert.deepEqual((await over.peer.terminal).launch, { stage: 0, errno: ERRNO.EAGAIN });
  for (const r of running) await r.peer.cancel();
  await Promise.all(running.map((r) => r.peer.terminal));
  const mem = await exec(
    x.c,
    start(["/bin/cat"], { stdin: true, chunk: 256 * 1024 - 17, input: { unit: "bytes", size: 600 * 1024 } }),
  );
  assert.deepEqual((await mem.peer.terminal).launch, { stage: 0, errno: ERRNO.ENOMEM });
  const missing = await exec(x.c, start(["/no/such/program"]));
  assert.deepEqual((await missing.peer.terminal).launch, { stage: 0, errno: ERRNO.ENOENT });
  await x.c.stop();
  assert.equal(await x.run, 0);
});

Deno.test("messages about executions that end the session", async (t) => {
  const k = { id: 900n, generation: 1n };
  const st = start([SH, "-c", "sleep 30"], { output: { unit: "frames", size: 2 } });
  const rows: [string, Uint8Array[]][] = [
    ["a body that does not decode", [encodeFrame(Kind.ExecCancel, new Uint8Array(17))]],
    ["a second start", [raw({ type: "start", key: k, start: st }), raw({ type: "start", key: k, start: st })]],
    ["credit beyond the window", [
      raw({ type: "start", key: k, start: st }),
      raw({ type: "credit", key: k, pool: 3, units: 1 }),
    ]],
    ["credit of the input from the host", [
      raw({ type: "start", key: k, start: st }),
      raw({ type: "credit", key: k, pool: 0, units: 1 }),
    ]],
    ["credit of a pool it does not have", [
      raw({ type: "start", key: k, start: st }),
      raw({ type: "credit", key: k, pool: 1, units: 1 }),
    ]],
    ["input without stdin", [
      raw({ type: "start", key: k, start: st }),
      raw({ type: "input", key: k, bytes: Uint8Array.of(1) }),
    ]],
    ["a message only the guest sends", [encodeFrame(Kind.ExecStarted, new Uint8Array(16))]],
  ];
  for (const [name, frames] of rows) {
    await t.step(name, async () => {
      const x = await session();
      for (const f of frames) x.s.sendRaw(f);
      assert.equal(await x.run, 1);
      assert.ok(x.worker.problem);
      assert.deepEqual(await groupMembers(x.pids), [], "its programs ended");
    });
  }
});

Deno.test("generations: stale starts after the later one ended or was refused; a second start of either ends the session", async () => {
  const x = await session();
  const id = 4242n;
  const later = await x.c.execute({ id, generation: 5n }, start(["/bin/true"]), () => {});
  await later.terminal;
  x.s.sendRaw(raw({ type: "start", key: { id, generation: 4n }, start: start(["/bin/true"]) }));
  await x.c.ping(); // a stale start changes nothing: no answer came before the Pong
  const refused = await x.c.execute({ id: id + 1n, generation: 3n }, start(["/no/such"]), () => {});
  assert.equal((await refused.terminal).launch?.errno, ERRNO.ENOENT);
  x.s.sendRaw(raw({ type: "start", key: { id: id + 1n, generation: 2n }, start: start(["/bin/true"]) }));
  await x.c.ping();
  x.s.sendRaw(raw({ type: "start", key: { id: id + 1n, generation: 3n }, start: start(["/bin/true"]) }));
  assert.equal(await x.run, 1);
  assert.match(x.worker.problem ?? "", /second start/);
});

Deno.test("a later generation and a reset abandon executions, whose programs end; a stale message changes nothing", async () => {
  const x = await session();
  const id = 777n;
  const first = await x.c.execute({ id, generation: 1n }, start([SH, "-c", "sleep 0.3; echo done"]), () => {});
  const second = await x.c.execute({ id, generation: 2n }, start([SH, "-c", "echo two"]), () => {});
  await assert.rejects(first.terminal, ExecAbandoned);
  assert.equal((await second.terminal).status.kind, "exit");
  x.s.sendRaw(raw({ type: "cancel", key: { id, generation: 1n }, cause: "cancel" }));
  await x.c.ping();
  assert.equal(x.worker.engine.count, 1, "the abandoned program runs on");
  await waitFor(() => Promise.resolve(x.worker.engine.count === 0), 3000, "its program ended and was collected");
  const e = await exec(x.c, start([SH, "-c", "sleep 0.3"]));
  x.s.reattach();
  await x.c.done;
  assert.equal(x.worker.engine.running, 0);
  await waitFor(() => Promise.resolve(x.worker.engine.count === 0), 3000, "the reset's abandoned program ended");
  void e;
  x.s.sendRaw(encodeFrame(Kind.Stop));
  assert.equal(await x.run, 0);
});

Deno.test("a stop ends running executions and collects their statuses; a runner that gave up still collects", async () => {
  const x = await session();
  await exec(x.c, start([SH, "-c", "sleep 30"]));
  await exec(x.c, start([SH, "-c", "trap '' TERM; sleep 30"]));
  const gaveUp = await exec(x.c, start([SH, "-c", "trap '' TERM; sleep 30"], { graceMs: 0, settlementMs: 0 }));
  await gaveUp.peer.cancel();
  const o = await gaveUp.peer.terminal;
  assert.deepEqual([o.status, o.cause, o.reusable], [{ kind: "none" }, "cancel", false]);
  await waitFor(() => Promise.resolve(x.worker.engine.count === 2), 3000, "the given-up program was collected");
  assert.equal(await x.c.stop(), null);
  assert.equal(await x.run, 0);
  assert.deepEqual(await groupMembers(x.pids), []);
});

Deno.test("a program that ends while a descendant holds its output: the descendant ends, the output ends at once", async () => {
  const x = await session();
  const t0 = performance.now();
  const e = await exec(x.c, start([SH, "-c", "sleep 30 & echo parent"], { settlementMs: 5000, graceMs: 5000 }));
  const o = await e.peer.terminal;
  assert.ok(performance.now() - t0 < 2000);
  assert.equal(e.out.text(1), "parent\n");
  assert.deepEqual([o.status, o.stdoutLost], [{ kind: "exit", code: 0 }, false]);
  assert.deepEqual(await groupMembers(x.pids), [], "no process of its group runs");
  await x.c.stop();
  assert.equal(await x.run, 0);
});

Deno.test("a descendant that left the group holds a stream: after settlement and grace the runner gives up on it", async () => {
  const x = await session();
  // The parent waits until its child has left its session (setsid), then ends.
  const script =
    'setsid sleep 3 & c=$!; while [ "$(ps -o sid= -p $c)" = "$(ps -o sid= -p $$)" ]; do sleep 0.01; done; ' +
    "echo parent";
  const t0 = performance.now();
  const e = await exec(x.c, start([SH, "-c", script], { settlementMs: 150, graceMs: 150 }));
  const o = await e.peer.terminal;
  const took = performance.now() - t0;
  assert.equal(e.out.text(1), "parent\n", "what arrived before the fence is kept");
  assert.deepEqual(
    [o.status, o.cause, o.stdoutLost, o.reusable],
    [{ kind: "exit", code: 0 }, null, true, false],
    `${JSON.stringify(o)} after ${took} ms`,
  );
  assert.ok(took >= 250 && took < 2500, `the fence held ${took} ms`);
  await x.c.stop();
  assert.equal(await x.run, 0);
});

Deno.test("a program that a real-time signal ends", async () => {
  const x = await session();
  const e = await exec(x.c, start([SH, "-c", "kill -s 36 $$"]));
  assert.deepEqual((await e.peer.terminal).status, { kind: "signal", signal: 36 });
  await x.c.stop();
  assert.equal(await x.run, 0);
});

Deno.test("an execution whose start comes in the payload of the root's configuration times out from its own start", async () => {
  const x = await session({ configure: false, root: { assemblyMs: 500 } });
  const k = key();
  const out = collector();
  const st = start([SH, "-c", "sleep 0.1; echo ok"], { timeoutMs: 400 });
  const peer = await x.c.execute(k, st, out.sink, { send: false });
  const config = encodeFrame(Kind.RootConfig, encodeRootConfig(defaultRootConfig()));
  x.s.sendRaw(Uint8Array.of(...config, ...raw({ type: "start", key: k, start: st })));
  assert.equal((await x.c.receive(5000)).kind, Kind.Ready);
  const o = await peer.terminal;
  assert.deepEqual([o.status, o.cause, out.text(1)], [{ kind: "exit", code: 0 }, null, "ok\n"]);
  await x.c.stop();
  assert.equal(await x.run, 0);
});

Deno.test("a host that sends without reading holds the worker's queue to 4 MiB; nothing is lost once it reads", async () => {
  const x = await session();
  let unstall!: () => void;
  x.s.stall = new Promise((r) => unstall = r);
  const body = new Uint8Array(256 * 1024).fill(3);
  for (let i = 0; i < 24; i++) x.s.sendRaw(encodeFrame(Kind.Echo, body));
  await new Promise((r) => setTimeout(r, 200));
  assert.ok(x.worker.outbox.bytes > OUTPUT_QUEUE_LIMIT, "replies queued");
  assert.ok(x.worker.outbox.bytes <= INPUT_QUEUE_LIMIT + 2 * (body.length + 5), `queued ${x.worker.outbox.bytes}`);
  unstall();
  x.s.stall = null;
  for (let i = 0; i < 24; i++) assert.equal((await x.c.receive(5000)).body.length, body.length);
  await x.c.stop();
  assert.equal(await x.run, 0);
});

async function waitFor(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`timed out waiting for: ${what}`);
}

Deno.test("a host that goes away ends the session: the worker drops its executions, and their programs end", async () => {
  const x = await session();
  await exec(x.c, start([SH, "-c", "sleep 30"]));
  await exec(x.c, start([SH, "-c", "trap '' TERM; sleep 30"]));
  await waitFor(async () => (await groupMembers(x.pids)).length >= 2, 3000, "both programs lead their groups");
  x.s.endHost();
  assert.equal(await x.run, 1);
  assert.deepEqual(await groupMembers(x.pids), []);
});
