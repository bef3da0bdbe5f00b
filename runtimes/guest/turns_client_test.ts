import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import { decodeLine, encodeMessage, type GuestMessage, type HostMessage, LineSplitter } from "../../core/turns/mod.ts";
import { TurnsClient, TurnsClientError } from "./turns_client.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";

const VM = "7e57a1b2-0000-4000-8000-0123456789ab";
const HELLO: GuestMessage = { type: "Hello", vm_id: VM, guestd_version: "0.1.0" };

/** An in-memory guest: `say` writes guest messages, `heard` collects host messages. */
function _pair() {
  const toHost = new TransformStream<Uint8Array, Uint8Array>({}, { highWaterMark: 64 }, { highWaterMark: 64 });
  const toGuest = new TransformStream<Uint8Array, Uint8Array>({}, { highWaterMark: 64 }, { highWaterMark: 64 });
  const w = toHost.writable.getWriter();
  const heard: HostMessage[] = [];
  const waiting: (() => void)[] = [];
  let cursor = 0;
  void (async () => {
    const split = new LineSplitter();
    for await (const chunk of toGuest.readable) {
      for (const ev of split.push(chunk)) {
        if (!("line" in ev)) continue;
        const m = decodeLine(ev.line, "host-to-guest");
        heard.push(m);
        waiting.splice(0).forEach((f) => f());
      }
    }
  })();
  return {
    duplex: { readable: toHost.readable, writable: toGuest.writable },
    say: (m: GuestMessage) => w.write(new TextEncoder().encode(encodeMessage(m, "guest-to-host"))),
    raw: (s: string) => w.write(new TextEncoder().encode(s)),
    end: () => w.close(),
    heard,
    /** The next host message not yet taken, waiting for it if need be. */
    next: async (): Promise<HostMessage> => {
      while (cursor >= heard.length) await new Promise<void>((r) => waiting.push(r));
      return heard[cursor++]!;
    },
  };
}

async function _attached(timers = new FakeClock()) {
  const p = _pair();
  await p.say(HELLO);
  const client = await TurnsClient.attach(p.duplex, {
    logger: silentLogger(),
    clock: timers,
    now: () => 5n,
  });
  return { p, client, timers };
}

Deno.test("attach waits for Hello and keeps it", async () => {
  const { client } = await _attached();
  assert.deepEqual(client.hello, HELLO);
  assert.equal(client.migration, null);
});

Deno.test("attach refuses a channel whose first message is not Hello", async () => {
  const p = _pair();
  await p.say({ type: "Pong" });
  await assert.rejects(
    TurnsClient.attach(p.duplex, { logger: silentLogger() }),
    (e: unknown) => e instanceof TurnsClientError && e.reason === "no-hello",
  );
});

Deno.test("attach gives up when no Hello comes before the timeout", async () => {
  const timers = new FakeClock();
  const p = _pair();
  const att = TurnsClient.attach(p.duplex, { logger: silentLogger(), clock: timers, helloTimeoutMs: 50 });
  const refused = assert.rejects(att, (e: unknown) => e instanceof TurnsClientError && e.reason === "timeout");
  await timers.advance(49);
  assert.equal(timers.pending, 1, "still waiting for Hello before its timeout");
  await timers.advance(1);
  await refused;
});

Deno.test("ping sends Ping and resolves on Pong; a guest Ping is answered with Pong", async () => {
  const { p, client } = await _attached();
  const done = client.ping();
  assert.equal((await p.next()).type, "Ping");
  await p.say({ type: "Pong" });
  await done;
  await p.say({ type: "Ping" });
  assert.equal((await p.next()).type, "Pong");
});

Deno.test("drain between turns: DrainAck null takes Intent → Draining → Quiescent", async () => {
  const { p, client } = await _attached();
  const d = client.drain("m-1", 5000);
  assert.deepEqual(await p.next(), { type: "DrainRequest", deadline_ms: 5000 });
  assert.equal(client.migration?.phase, "Draining");
  await p.say({ type: "DrainAck", in_flight: null });
  const out = await d;
  assert.equal(out.result, "quiescent");
  assert.equal(out.inFlightAtAck, null);
  assert.equal(client.migration?.phase, "Quiescent");
  assert.deepEqual(client.events.map((e) => `${e.from}>${e.to}`), [
    "Stable>Intent",
    "Intent>Draining",
    "Draining>Quiescent",
  ]);
});

Deno.test("drain with a turn in flight waits for its TurnEnded, then is quiescent", async () => {
  const { p, client } = await _attached();
  const d = client.drain("m-1", 5000);
  await p.next();
  await p.say({ type: "DrainAck", in_flight: 3 });
  await p.say({ type: "TurnEnded", turn_id: 2, ts: 1n }); // not the one in flight
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(client.migration?.phase, "Draining");
  await p.say({ type: "TurnEnded", turn_id: 3, ts: 2n });
  const out = await d;
  assert.equal(out.result, "quiescent");
  assert.equal(out.inFlightAtAck, 3);
});

Deno.test("no DrainAck before the deadline: DrainCancel, abort to Stable as drain-timeout", async () => {
  const { p, client, timers } = await _attached();
  const d = client.drain("m-1", 100);
  await p.next();
  await timers.advance(100);
  const out = await d;
  assert.equal(out.result, "aborted");
  assert.ok(out.result === "aborted" && out.reason === "drain-timeout");
  assert.equal((await p.next()).type, "DrainCancel");
  assert.equal(client.migration?.phase, "Stable");
  const last = client.events.at(-1)!;
  assert.deepEqual([last.from, last.to, last.via, last.reason], ["Draining", "Stable", "abort", "drain-timeout"]);
});

Deno.test("a turn in flight past the deadline: DrainCancel, abort as turn-in-flight-too-long", async () => {
  const { p, client, timers } = await _attached();
  const d = client.drain("m-1", 100);
  await p.next();
  await p.say({ type: "DrainAck", in_flight: 0 });
  await new Promise((r) => setTimeout(r, 0));
  await timers.advance(100);
  const out = await d;
  assert.ok(out.result === "aborted" && out.reason === "turn-in-flight-too-long" && out.inFlightAtAck === 0);
  assert.equal((await p.next()).type, "DrainCancel");
});

Deno.test("the channel closing mid-drain aborts as connection-lost", async () => {
  const { p, client } = await _attached();
  const d = client.drain("m-1", 5000);
  await p.next();
  await p.end();
  const out = await d;
  assert.ok(out.result === "aborted" && out.reason === "connection-lost");
  assert.ok(client.closed);
});

Deno.test("cancelDrain from Quiescent sends DrainCancel and returns to Stable; a second drain may follow", async () => {
  const { p, client } = await _attached();
  const d = client.drain("m-1", 5000);
  await p.next();
  await p.say({ type: "DrainAck", in_flight: null });
  const out = await d;
  assert.ok(out.result === "quiescent");
  const s = await client.cancelDrain(out.state, "operator");
  assert.equal(s.phase, "Stable");
  assert.equal((await p.next()).type, "DrainCancel");
  const d2 = client.drain("m-2", 5000);
  assert.equal((await p.next()).type, "DrainRequest");
  await p.say({ type: "DrainAck", in_flight: null });
  assert.equal((await d2).result, "quiescent");
});

Deno.test("a drain while one is in progress is refused", async () => {
  const { p, client } = await _attached();
  void client.drain("m-1", 5000);
  await p.next();
  await assert.rejects(client.drain("m-2", 5000), TypeError);
});

Deno.test("refused guest lines are skipped; later messages still arrive", async () => {
  const { p, client } = await _attached();
  const pong = client.waitFor((m) => m.type === "Pong", 1000);
  await p.raw(`{"type":"RunTurn","turn_id":1}\nnot json\n`);
  await p.say({ type: "Pong" });
  assert.equal((await pong).type, "Pong");
});
