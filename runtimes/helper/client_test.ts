/**
 * The helper client's timeouts: one timer per client at the earliest deadline of the calls pending, none when no call
 * is, each call failing `timeout` at its own deadline (on a fake clock, against a scripted peer on a real unix socket).
 */
import assert from "node:assert/strict";
import { HelperClient } from "./client.ts";
import { encodeResult, HelperError } from "../../core/helper/mod.ts";
import { drainJobs, FakeClock } from "../../fixtures/clock/fake_clock.ts";

/** The peer's loops end when the test closes its listener and connections; anything else surfaces. */
function _closed(e: unknown): void {
  if (!(e instanceof Deno.errors.BadResource || e instanceof Deno.errors.Interrupted)) throw e;
}

/** A peer on a unix socket that reads request lines and answers only the ids a test tells it to. */
async function scriptedPeer() {
  const dir = await Deno.makeTempDir({ prefix: "bcd-helper-client-" });
  const path = `${dir}/peer.sock`;
  const l = Deno.listen({ transport: "unix", path });
  const conns: Deno.Conn[] = [];
  const ids: number[] = [];
  const seen: (() => void)[] = [];
  const accepting = (async () => {
    for await (const c of l) {
      conns.push(c);
      void (async () => {
        let buf = "";
        for await (const chunk of c.readable.pipeThrough(new TextDecoderStream())) {
          buf += chunk;
          let nl;
          while ((nl = buf.indexOf("\n")) >= 0) {
            ids.push((JSON.parse(buf.slice(0, nl)) as { id: number }).id);
            buf = buf.slice(nl + 1);
            seen.shift()?.();
          }
        }
      })().catch(_closed);
    }
  })().catch(_closed);
  return {
    path,
    ids,
    /** Resolves when the peer has read `n` requests in all. */
    async read(n: number): Promise<void> {
      while (ids.length < n) await new Promise<void>((r) => seen.push(r));
    },
    async answer(id: number): Promise<void> {
      await conns[0]!.write(new TextEncoder().encode(encodeResult(id, { bootId: "b" })));
    },
    async close(): Promise<void> {
      l.close();
      for (const c of conns) c.close();
      await accepting;
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const timedOut = (e: unknown) => e instanceof HelperError && e.code === "timeout";

Deno.test("pending calls share one timer and each times out at its own deadline, a nearer one rearming it", async () => {
  const peer = await scriptedPeer();
  const clock = new FakeClock();
  const c = new HelperClient({
    socket: peer.path,
    clock,
    timeoutsMs: { "holds.list": 200, "host.boot_id": 50 },
  });
  try {
    let longDone = false;
    const long = c.call("holds.list", {}).finally(() => void (longDone = true));
    const longRefused = assert.rejects(long, timedOut);
    await peer.read(1);
    assert.equal(clock.pending, 1, "one timer for the first call");
    const short = assert.rejects(c.call("host.boot_id", {}), (e: unknown) => {
      assert.ok(timedOut(e));
      assert.match((e as Error).message, /host\.boot_id: no answer from the helper in 50 ms/);
      return true;
    });
    await peer.read(2);
    assert.equal(clock.pending, 1, "the nearer deadline rearms the one timer, it adds none");
    await clock.advance(50);
    await short;
    await drainJobs();
    assert.equal(longDone, false, "the later call is still pending at the first deadline");
    assert.equal(clock.pending, 1, "rearmed at the deadline left");
    await clock.advance(149);
    await drainJobs();
    assert.equal(longDone, false);
    await clock.advance(1);
    await longRefused;
    assert.equal(clock.pending, 0, "no call pending, no timer");
  } finally {
    c.close();
    await peer.close();
  }
});

Deno.test("an answered call drops the timer with the last pending call; a later call arms it again", async () => {
  const peer = await scriptedPeer();
  const clock = new FakeClock();
  const c = new HelperClient({ socket: peer.path, clock, defaultTimeoutMs: 100 });
  try {
    const first = c.call("host.boot_id", {});
    await peer.read(1);
    assert.equal(clock.pending, 1);
    await peer.answer(peer.ids[0]!);
    assert.deepEqual(await first, { bootId: "b" });
    assert.equal(clock.pending, 0, "the answered call's timer is gone");
    const second = assert.rejects(c.call("host.boot_id", {}), timedOut);
    await peer.read(2);
    assert.equal(clock.pending, 1);
    await clock.advance(100);
    await second;
    assert.equal(clock.pending, 0);
  } finally {
    c.close();
    await peer.close();
  }
});

Deno.test("the client reads answers with the connection's read, never its readable stream (Deno's streams: issue 24)", async () => {
  const peer = await scriptedPeer();
  const connect = Deno.connect;
  const touched: string[] = [];
  // Every connection the client opens is the real one behind a proxy that notes a read of `readable`.
  Deno.connect = (async (opts: Deno.UnixConnectOptions) => {
    const conn = await connect(opts);
    return new Proxy(conn, {
      get(target, prop) {
        if (prop === "readable") touched.push("readable");
        const v = Reflect.get(target, prop, target);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  }) as typeof Deno.connect;
  const c = new HelperClient({ socket: peer.path, defaultTimeoutMs: 30_000 });
  try {
    const answer = c.call("host.boot_id", {});
    await peer.read(1);
    await peer.answer(peer.ids[0]!);
    assert.deepEqual(await answer, { bootId: "b" });
    assert.deepEqual(touched, []);
  } finally {
    Deno.connect = connect;
    c.close();
    await peer.close();
  }
});
