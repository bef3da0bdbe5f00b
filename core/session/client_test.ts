import assert from "node:assert/strict";
import { decodeNodeFrame, encodeGatewayFrame, type GatewayFrame, type NodeFrame, type Props } from "../../proto/mod.ts";
import type { bcd } from "../../proto/mod.ts";
import { silentLogger } from "../log/mod.ts";
import { type SessionDelegate, SessionProtocolError } from "./client.ts";
import { HEARTBEAT_RANGE_MS, heartbeatInterval, SessionClient, STABLE_SESSION_MS } from "./client.ts";
import { type FrameTransport, webApiCloseCode, wrapWebSocket } from "./transport.ts";
import { connectWebSocket } from "./ws_client.ts";
import { type Clock, realClock } from "../clock.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";

type GatewayFrameInit = Props<typeof bcd.v1.GatewayFrame>;

/** A scripted gateway on loopback: each accepted session runs `script`. */
function scriptedGateway(script: (t: FrameTransport, n: number) => Promise<void>) {
  let n = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    const t = wrapWebSocket(socket);
    socket.addEventListener("open", () => void script(t, n++).catch(() => t.close(1011, "script failed")));
    return response;
  });
  return { url: `ws://127.0.0.1:${server.addr.port}/v1/session`, server };
}

async function recv(t: FrameTransport): Promise<NodeFrame> {
  const b = await t.receive();
  assert.ok(b, "gateway expected a frame");
  return decodeNodeFrame(b);
}
const send = (t: FrameTransport, f: GatewayFrameInit) => t.send(encodeGatewayFrame(f));

/** A gateway-side list a test waits on: `next()` resolves with the next item pushed (or one already there). */
class Inbox<T> {
  readonly items: T[] = [];
  #waiters: ((v: T) => void)[] = [];
  #taken = 0;
  push(v: T): void {
    this.items.push(v);
    this.#waiters.shift()?.(v);
  }
  next(): Promise<T> {
    const i = this.#taken++;
    if (i < this.items.length) return Promise.resolve(this.items[i]!);
    return new Promise((r) => this.#waiters.push(r));
  }
}

class RecordingDelegate implements SessionDelegate {
  events: string[] = [];
  frames: GatewayFrame[] = [];
  refuseWelcome = false;
  #watchers: { pred: (events: readonly string[]) => boolean; resolve: () => void }[] = [];

  /** Resolves once `pred` holds for the events so far: checked now and after each event, never by polling. */
  when(pred: (events: readonly string[]) => boolean): Promise<void> {
    if (pred(this.events)) return Promise.resolve();
    return new Promise((resolve) => this.#watchers.push({ pred, resolve }));
  }

  #record(e: string): void {
    this.events.push(e);
    this.#watchers = this.#watchers.filter((w) => !(w.pred(this.events) && (w.resolve(), true)));
  }
  hello(ch: bcd.v1.Challenge.$Properties) {
    this.#record(`challenge:${ch.gateway_id}`);
    return Promise.resolve({ node_id: "n-1", role: "node", applied_generation: 3, challenge_sig: new Uint8Array([1]) });
  }
  welcome(w: bcd.v1.Welcome.$Properties) {
    this.#record(`welcome:${w.session_epoch}`);
    if (this.refuseWelcome) throw new SessionProtocolError("time-mark", "server_time 10 minutes before the mark");
    return Promise.resolve();
  }
  established() {
    this.#record("established");
    return Promise.resolve();
  }
  frame(f: GatewayFrame) {
    this.frames.push(f);
    this.#record(`frame:${f.frame}`);
    return Promise.resolve();
  }
  heartbeat() {
    return { applied_generation: 3 };
  }
  disconnected(reason: string) {
    this.#record(`disconnected:${reason}`);
  }
}

function client(url: string, d: SessionDelegate, clock: Clock = realClock) {
  return new SessionClient({
    connect: () => connectWebSocket(url),
    delegate: d,
    log: silentLogger(),
    backoff: { baseMs: 1, maxMs: 2 },
    heartbeatMs: 200,
    clock,
  });
}

const count = (events: readonly string[], e: string) => events.filter((x) => x === e).length;

Deno.test("a session proves the key on the challenge, takes Welcome, then exchanges frames", async () => {
  const hellos: NodeFrame[] = [];
  const gw = scriptedGateway(async (t) => {
    send(t, { challenge: { nonce: new Uint8Array(32), gateway_id: "gw-1" } });
    hellos.push(await recv(t));
    send(t, { welcome: { session_epoch: 7, heartbeat_interval_ms: 200 } });
    send(t, { cancel: { command_id: "c-1", reason: "operator" } });
    heartbeats.push(await recv(t));
  });
  const heartbeats = new Inbox<NodeFrame>();
  const clock = new FakeClock();
  const d = new RecordingDelegate();
  const c = client(gw.url, d, clock);
  const stop = new AbortController();
  const run = c.run(stop.signal);
  await d.when((ev) => ev.includes("frame:cancel"));
  assert.deepEqual(d.events.slice(0, 4), ["challenge:gw-1", "welcome:7", "established", "frame:cancel"]);
  assert.equal(heartbeats.items.length, 0, "no heartbeat before its interval");
  await clock.advance(200);
  assert.equal((await heartbeats.next()).heartbeat?.applied_generation, 3);
  assert.equal(hellos[0]?.hello?.node_id, "n-1");
  assert.equal(c.epoch, 7);
  assert.equal(c.phase, "established");
  stop.abort();
  await run;
  await gw.server.shutdown();
});

Deno.test("a frame out of phase ends the session with a protocol close, and the client reconnects", async () => {
  const closes = new Inbox<NodeFrame>();
  const gw = scriptedGateway(async (t, n) => {
    if (n === 0) {
      send(t, { welcome: { session_epoch: 1 } }); // before any Challenge
      closes.push(await recv(t));
      return;
    }
    send(t, { challenge: { nonce: new Uint8Array(32), gateway_id: "gw" } });
    await recv(t);
    send(t, { welcome: { session_epoch: 2 } });
  });
  const d = new RecordingDelegate();
  const c = client(gw.url, d);
  const stop = new AbortController();
  const run = c.run(stop.signal);
  await d.when((ev) => ev.includes("established"));
  assert.equal(c.sessions, 1);
  assert.equal((await closes.next()).close?.reason, "protocol");
  assert.match(d.events[0]!, /disconnected:.*expected Challenge/);
  assert.equal(c.epoch, 2);
  stop.abort();
  await run;
  await gw.server.shutdown();
});

Deno.test("a refused Welcome is answered with a close naming the reason and never established", async () => {
  const closes = new Inbox<NodeFrame>();
  const gw = scriptedGateway(async (t) => {
    send(t, { challenge: { nonce: new Uint8Array(32), gateway_id: "gw" } });
    await recv(t);
    send(t, { welcome: { session_epoch: 9 } });
    closes.push(await recv(t));
  });
  const d = new RecordingDelegate();
  d.refuseWelcome = true;
  const c = client(gw.url, d);
  const stop = new AbortController();
  const run = c.run(stop.signal);
  assert.equal((await closes.next()).close?.reason, "time-mark");
  await d.when((ev) => ev.some((e) => e.startsWith("disconnected:refused Welcome")));
  assert.ok(!d.events.includes("established"));
  stop.abort();
  await run;
  await gw.server.shutdown();
});

Deno.test("an undecodable frame ends the session", async () => {
  const gw = scriptedGateway((t) => {
    t.send(new Uint8Array([0xff, 0xff, 0xff]));
    return Promise.resolve();
  });
  const d = new RecordingDelegate();
  const c = client(gw.url, d);
  const stop = new AbortController();
  const run = c.run(stop.signal);
  await d.when((ev) => ev.some((e) => e.includes("undecodable")));
  stop.abort();
  await run;
  await gw.server.shutdown();
});

Deno.test("a gateway silent before Challenge, or after Hello, is dropped when the handshake times out", async (t) => {
  for (const phase of ["before Challenge", "after Hello"] as const) {
    await t.step(phase, async () => {
      const silent = new Inbox<true>();
      const gw = scriptedGateway(async (t) => {
        if (phase === "after Hello") {
          send(t, { challenge: { nonce: new Uint8Array(32), gateway_id: "gw" } });
          await recv(t);
        }
        silent.push(true);
        await t.receive(); // silent until the node closes
      });
      const clock = new FakeClock();
      const d = new RecordingDelegate();
      const c = new SessionClient({
        connect: () => connectWebSocket(gw.url),
        delegate: d,
        log: silentLogger(),
        backoff: { baseMs: 1, maxMs: 2 },
        handshakeTimeoutMs: 50,
        clock,
      });
      const stop = new AbortController();
      const run = c.run(stop.signal);
      await silent.next();
      if (phase === "after Hello") await d.when((ev) => ev.includes("challenge:gw"));
      await clock.advance(49);
      assert.equal(count(d.events, "disconnected:no Welcome within 50 ms"), 0, "not before the timeout");
      await clock.advance(1);
      await d.when((ev) => ev.includes("disconnected:no Welcome within 50 ms"));
      assert.ok(!d.events.includes("established"));
      stop.abort();
      await run;
      await gw.server.shutdown();
    });
  }
});

Deno.test("heartbeatInterval(): a gateway's interval is clamped to the documented range", () => {
  assert.deepEqual(HEARTBEAT_RANGE_MS, [200, 600_000]);
  const rows: [asked: number, want: number][] = [[0, 15_000], [1, 200], [200, 200], [5000, 5000], [600_000, 600_000], [
    2 ** 31 + 5,
    600_000,
  ], [2 ** 32 - 1, 600_000]];
  for (const [asked, want] of rows) assert.equal(heartbeatInterval(asked, 15_000), want, `asked ${asked}`);
});

Deno.test("the backoff starts again from its base only after a session stayed up STABLE_SESSION_MS", async () => {
  let now = 0;
  let welcomes = 0;
  const gw = scriptedGateway(async (t) => {
    send(t, { challenge: { nonce: new Uint8Array(32), gateway_id: "gw" } });
    await recv(t);
    send(t, { welcome: { session_epoch: ++welcomes } });
    t.close(1000, "cut");
  });
  const waits: number[] = [];
  const d = new RecordingDelegate();
  let established = 0;
  d.established = () => {
    if (++established === 3) now += STABLE_SESSION_MS; // the third session stays up long enough
    return Promise.resolve();
  };
  const stop = new AbortController();
  const c = new SessionClient({
    connect: () => connectWebSocket(gw.url),
    delegate: d,
    log: silentLogger(),
    backoff: { baseMs: 100, maxMs: 100_000, random: () => 0 },
    clock: {
      now: () => now,
      monotonic: () => now,
      setTimer: realClock.setTimer,
      setRareTimer: realClock.setRareTimer,
      sleep: (ms: number) => {
        waits.push(ms);
        if (waits.length >= 6) stop.abort();
        return Promise.resolve();
      },
    },
  });
  await c.run(stop.signal);
  assert.deepEqual(waits.slice(0, 6), [50, 100, 50, 100, 200, 400], "grows across cuts; resets after the stable one");
  await gw.server.shutdown();
});

Deno.test("a delegate's SessionProtocolError on a frame after Welcome ends the session with a close naming the reason", async () => {
  const closes = new Inbox<NodeFrame>();
  const gw = scriptedGateway(async (t) => {
    send(t, { challenge: { nonce: new Uint8Array(32), gateway_id: "gw" } });
    await recv(t);
    send(t, { welcome: { session_epoch: 1 } });
    send(t, { heartbeat: {} });
    closes.push(await recv(t));
  });
  const d = new RecordingDelegate();
  d.frame = () => Promise.reject(new SessionProtocolError("time-mark", "heartbeat from the year 2200"));
  const c = client(gw.url, d);
  const stop = new AbortController();
  const run = c.run(stop.signal);
  assert.equal((await closes.next()).close?.reason, "time-mark");
  await d.when((ev) => ev.some((e) => e.includes("refused heartbeat: heartbeat from the year 2200")));
  stop.abort();
  await run;
  await gw.server.shutdown();
});

Deno.test("wrapWebSocket(): a text frame closes the socket with 4003 (a code the Web API accepts) and nothing throws", async () => {
  let serverSide: FrameTransport | undefined;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    serverSide = wrapWebSocket(socket);
    return response;
  });
  const ws = new WebSocket(`ws://127.0.0.1:${server.addr.port}/`);
  const closed = new Promise<CloseEvent>((r) => ws.addEventListener("close", r, { once: true }));
  await new Promise((r) => ws.addEventListener("open", r, { once: true }));
  ws.send("text");
  const ev = await closed;
  assert.equal(ev.code, 4003);
  assert.equal(ev.reason, "binary frames only");
  assert.equal(serverSide?.closedReason, "1003 text frame refused");
  assert.equal(webApiCloseCode(1009), 4009);
  assert.equal(webApiCloseCode(1000), 1000);
  assert.equal(webApiCloseCode(4321), 4321);
  await server.shutdown();
});
