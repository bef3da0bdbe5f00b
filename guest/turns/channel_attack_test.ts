// The flaw of issue 21, as attacks on a real `TurnsAgent` over TCP: a peer on the guest network that does not hold the
// VM's channel key must not start a turn, deliver Secrets, or reopen a drained gate by connecting. Each attack waits on
// an event (the guest closing the connection, or an answer), never on a sleep.
import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import { newChannelKey } from "../../core/turns/mod.ts";
import type { GuestMessage } from "../../core/turns/mod.ts";
import { connectTurnsTcp } from "../../runtimes/guest/turns_connect.ts";
import { TurnsAgent } from "./agent.ts";
import { listenTcp } from "./transport.ts";

const VM = "7e57a1b2-0000-4000-8000-0123456789ab";
const log = silentLogger();
const TURN_SH = `echo "$SLEEPWALK_TURN_ID \${API_KEY:-none}" >> "$1/ran"
while [ ! -e "$1/release-$SLEEPWALK_TURN_ID" ]; do sleep 0.01; done
`;

async function _agent() {
  const dir = await Deno.makeTempDir({ prefix: "bcd-turns-attack-" });
  await Deno.writeTextFile(`${dir}/turn.sh`, TURN_SH);
  const key = newChannelKey();
  const stop = new AbortController();
  const listener = listenTcp("127.0.0.1", 0);
  const agent = new TurnsAgent({
    vmId: VM,
    guestdVersion: "0.1.0",
    mode: { kind: "native", turnArgv: ["sh", `${dir}/turn.sh`, dir] },
    listeners: [listener],
    logger: log,
    signal: stop.signal,
    channelKey: key,
  });
  const done = agent.run();
  const cleanup = async () => {
    stop.abort();
    await done;
    await Deno.remove(dir, { recursive: true });
  };
  return { dir, agent, key, port: listener.port, cleanup };
}

/** A raw peer: sends lines, reads every line until the guest closes the connection (or `until` matches). */
async function _raw(port: number, lines: string[], until?: (l: string) => boolean): Promise<string[]> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const seen: string[] = [];
  const w = conn.writable.getWriter();
  const reading = (async () => {
    let buf = "";
    const dec = new TextDecoder();
    try {
      for await (const chunk of conn.readable) {
        buf += dec.decode(chunk, { stream: true });
        let i;
        while ((i = buf.indexOf("\n")) >= 0) {
          seen.push(buf.slice(0, i));
          buf = buf.slice(i + 1);
          if (until?.(seen.at(-1)!)) return;
        }
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.ConnectionReset)) throw e;
    }
  })();
  for (const l of lines) await w.write(new TextEncoder().encode(l + "\n")).catch(() => {});
  await reading;
  try {
    conn.close();
  } catch (e) {
    if (!(e instanceof Deno.errors.BadResource)) throw e;
  }
  return seen;
}

async function _ran(dir: string): Promise<string> {
  try {
    return await Deno.readTextFile(`${dir}/ran`);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return "";
    throw e;
  }
}

const _is = (type: GuestMessage["type"]) => (m: GuestMessage) => m.type === type;

Deno.test("attack: a peer without the channel key sends RunTurn and Secrets; nothing runs and the guest hangs up", async () => {
  const s = await _agent();
  try {
    const seen = await _raw(s.port, [
      `{"type":"Secrets","env":{"API_KEY":"attacker"}}`,
      `{"type":"RunTurn","turn_id":0}`,
      `{"type":"Ping"}`,
    ], (l) => l.includes("Pong"));
    assert.ok(seen[0]?.includes(`"Hello"`), `the guest greets every connection: ${seen}`);
    assert.ok(!seen.some((l) => l.includes("TurnStarted") || l.includes("Pong")), `answered an outsider: ${seen}`);
    assert.equal(s.agent.engine.inFlight, null);
    assert.deepEqual(s.agent.engine.queued, []);
    assert.equal(await _ran(s.dir), "");
    // The real host still gets in, and its turn runs without the attacker's secret.
    const c = await connectTurnsTcp("127.0.0.1", s.port, { logger: log, channelKey: s.key });
    try {
      const started = c.waitFor(_is("TurnStarted"), 10_000);
      await c.send({ type: "RunTurn", turn_id: 0 });
      await started;
      await Deno.writeTextFile(`${s.dir}/release-0`, "");
      await c.waitFor(_is("TurnEnded"), 10_000);
      assert.equal(await _ran(s.dir), "0 none\n");
    } finally {
      c.close();
    }
  } finally {
    await s.cleanup();
  }
});

Deno.test("attack: while drained, a stray connection (no key) gets no Resumed and the gate stays closed", async () => {
  const s = await _agent();
  const c = await connectTurnsTcp("127.0.0.1", s.port, { logger: log, channelKey: s.key });
  try {
    const out = await c.drain("m-attack", 10_000);
    assert.equal(out.result, "quiescent");
    await c.send({ type: "RunTurn", turn_id: 0 }); // queued behind the gate
    await c.ping();
    assert.deepEqual(s.agent.engine.queued, [0]);
    const seen = await _raw(s.port, [`{"type":"Ping"}`], (l) => l.includes("Pong") || l.includes("Resumed"));
    assert.ok(!seen.some((l) => l.includes("Resumed")), `a stray connection was taken for a restore: ${seen}`);
    assert.equal(s.agent.engine.gateOpen, false);
    assert.deepEqual(s.agent.engine.queued, [0]);
    assert.equal(s.agent.engine.inFlight, null);
    assert.equal(await _ran(s.dir), "");
  } finally {
    c.close();
    await s.cleanup();
  }
});

Deno.test("attack: while drained, the host reconnecting with the key but no new restore epoch does not reopen the gate", async () => {
  const s = await _agent();
  const c = await connectTurnsTcp("127.0.0.1", s.port, { logger: log, channelKey: s.key });
  try {
    assert.equal((await c.drain("m-1", 10_000)).result, "quiescent");
    await c.send({ type: "RunTurn", turn_id: 0 });
    await c.ping();
    const again = await connectTurnsTcp("127.0.0.1", s.port, { logger: log, channelKey: s.key });
    try {
      await again.ping();
      assert.equal(again.resumed, null);
      assert.equal(s.agent.engine.gateOpen, false);
      assert.deepEqual(s.agent.engine.queued, [0]);
    } finally {
      again.close();
    }
    // A restored VM's host carries the next epoch: now, and only now, the guest resumes and replays its queue.
    const restored = await connectTurnsTcp("127.0.0.1", s.port, { logger: log, channelKey: s.key, restore: true });
    try {
      const started = restored.waitFor(_is("TurnStarted"), 10_000);
      assert.ok(restored.resumed !== null, "the restore epoch brings Resumed");
      await started;
      assert.equal(s.agent.engine.gateOpen, true);
      assert.equal(s.agent.engine.epoch, 1);
      await Deno.writeTextFile(`${s.dir}/release-0`, "");
    } finally {
      restored.close();
    }
  } finally {
    c.close();
    await s.cleanup();
  }
});

Deno.test("attack: a host with the wrong key is refused before anything it sends is acted on", async () => {
  const s = await _agent();
  try {
    await assert.rejects(
      connectTurnsTcp("127.0.0.1", s.port, { logger: log, channelKey: newChannelKey() }),
      (e: Error) => /auth/.test(e.message),
    );
    assert.equal(s.agent.engine.authenticatedConnections, 0);
  } finally {
    await s.cleanup();
  }
});
