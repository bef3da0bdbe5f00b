// The agent over real sockets with real processes (sh scripts as turn command and wrapped command), driven by the
// host client of runtimes/guest. Turns wait for a release file, so "a turn is running" is a fact, not a sleep.
import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import { type GuestMessage, newChannelKey } from "../../core/turns/mod.ts";
import { connectTurnsTcp, connectTurnsUnix } from "../../runtimes/guest/turns_connect.ts";
import type { TurnsClient } from "../../runtimes/guest/turns_client.ts";
import { type AgentMode, TurnsAgent } from "./agent.ts";
import { DEFAULT_END_MARKER, DEFAULT_START_MARKER } from "./engine.ts";
import { listenTcp, listenUnix, type TurnsListener } from "./transport.ts";

const VM = "7e57a1b2-0000-4000-8000-0123456789ab";
const log = silentLogger();

const TURN_SH = `
echo "turn $SLEEPWALK_TURN_ID output"
echo "$SLEEPWALK_TURN_ID \${API_KEY:-none}" >> "$1/ran"
while [ ! -e "$1/release-$SLEEPWALK_TURN_ID" ]; do sleep 0.01; done
`;

async function _setup(
  mode: (dir: string) => AgentMode,
  listen: (dir: string) => TurnsListener,
  channelKey?: Uint8Array,
) {
  const dir = await Deno.makeTempDir({ prefix: "bcd-turns-" });
  await Deno.writeTextFile(`${dir}/turn.sh`, TURN_SH);
  const stop = new AbortController();
  const listener = listen(dir);
  const agent = new TurnsAgent({
    vmId: VM,
    guestdVersion: "0.1.0",
    mode: mode(dir),
    listeners: [listener],
    logger: log,
    signal: stop.signal,
    channelKey,
  });
  const done = agent.run();
  const cleanup = async () => {
    stop.abort();
    await done;
    await Deno.remove(dir, { recursive: true });
  };
  return { dir, agent, done, stop, cleanup, listener };
}

const native = (dir: string): AgentMode => ({ kind: "native", turnArgv: ["sh", `${dir}/turn.sh`, dir] });
const unix = (dir: string) => listenUnix(`${dir}/turns.sock`);

function _is<T extends GuestMessage["type"]>(type: T, turnId?: number) {
  return (m: GuestMessage): m is Extract<GuestMessage, { type: T }> =>
    m.type === type && (turnId === undefined || ("turn_id" in m && m.turn_id === turnId));
}

async function _ran(dir: string): Promise<string> {
  try {
    return await Deno.readTextFile(`${dir}/ran`);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return "";
    throw e;
  }
}

Deno.test("native mode over a unix socket: drain while a turn runs, queue behind the gate, replay on cancel", async () => {
  const s = await _setup(native, unix);
  const c: TurnsClient = await connectTurnsUnix(`${s.dir}/turns.sock`, { logger: log });
  try {
    assert.deepEqual(c.hello, { type: "Hello", vm_id: VM, guestd_version: "0.1.0" });
    await c.ping();
    await c.send({ type: "Secrets", env: { API_KEY: "sk-test" } });
    const started0 = c.waitFor(_is("TurnStarted", 0), 10_000);
    await c.send({ type: "RunTurn", turn_id: 0 });
    await started0;
    const drained = c.drain("m-1", 10_000);
    await c.send({ type: "RunTurn", turn_id: 1 }); // arrives after the DrainRequest: queued
    await Deno.writeTextFile(`${s.dir}/release-0`, "");
    const out = await drained;
    assert.equal(out.result, "quiescent");
    assert.equal(out.inFlightAtAck, 0);
    assert.equal(s.agent.engine.inFlight, null);
    assert.deepEqual(s.agent.engine.queued, [1]);
    assert.equal(await _ran(s.dir), "0 sk-test\n"); // turn 1 has not started behind the closed gate
    assert.ok(out.result === "quiescent");
    const started1 = c.waitFor(_is("TurnStarted", 1), 10_000);
    const ended1 = c.waitFor(_is("TurnEnded", 1), 10_000);
    await c.cancelDrain(out.state, "test");
    await started1;
    await Deno.writeTextFile(`${s.dir}/release-1`, "");
    await ended1;
    assert.equal(await _ran(s.dir), "0 sk-test\n1 sk-test\n");
    assert.deepEqual(c.events.map((e) => e.to), ["Intent", "Draining", "Quiescent", "Stable"]);
  } finally {
    c.close();
    await s.cleanup();
  }
});

Deno.test("native mode over TCP: the host proving a restore after a drain gets Resumed, then the queued turn", async () => {
  let port = 0;
  const channelKey = newChannelKey();
  const s = await _setup(native, () => {
    const l = listenTcp("127.0.0.1", 0);
    port = l.port;
    return l;
  }, channelKey);
  const c1 = await connectTurnsTcp("127.0.0.1", port, { logger: log, channelKey });
  let c2: TurnsClient | undefined;
  try {
    const out = await c1.drain("m-1", 10_000);
    assert.equal(out.result, "quiescent");
    assert.equal(out.inFlightAtAck, null);
    await c1.send({ type: "RunTurn", turn_id: 0 });
    await c1.ping(); // RunTurn was handled: queued
    assert.deepEqual(s.agent.engine.queued, [0]);
    c1.close(); // the source's connection dies with the snapshot
    while (s.agent.engine.connections > 0) await new Promise((r) => setTimeout(r, 5));
    c2 = await connectTurnsTcp("127.0.0.1", port, { logger: log, channelKey, restore: true });
    assert.ok(c2);
    assert.equal(c2.hello.type, "Hello");
    assert.equal(c2.epoch, 1);
    assert.equal(typeof c2.resumed?.ts, "bigint"); // Resumed came before attach returned
    await c2.waitFor(_is("TurnStarted", 0), 10_000);
    assert.equal(c1.resumed, null);
    const ended = c2.waitFor(_is("TurnEnded", 0), 10_000);
    await Deno.writeTextFile(`${s.dir}/release-0`, "");
    await ended;
  } finally {
    c1.close();
    c2?.close();
    await s.cleanup();
  }
});

Deno.test("Hello is first on every connection, including concurrent ones", async () => {
  const s = await _setup(native, unix);
  const a = await connectTurnsUnix(`${s.dir}/turns.sock`, { logger: log });
  const b = await connectTurnsUnix(`${s.dir}/turns.sock`, { logger: log });
  try {
    assert.equal(a.hello.vm_id, VM);
    assert.equal(b.hello.vm_id, VM);
    await Promise.all([a.ping(), b.ping()]);
  } finally {
    a.close();
    b.close();
    await s.cleanup();
  }
});

Deno.test("a refused line does not end the connection", async () => {
  const s = await _setup(native, unix);
  const conn = await Deno.connect({ transport: "unix", path: `${s.dir}/turns.sock` });
  try {
    const w = conn.writable.getWriter();
    const r = conn.readable.getReader();
    const got: string[] = [];
    const readLine = async () => {
      while (!got.join("").includes("\n")) got.push(new TextDecoder().decode((await r.read()).value));
      const all = got.join("");
      const i = all.indexOf("\n");
      got.splice(0, got.length, all.slice(i + 1));
      return all.slice(0, i);
    };
    assert.match(await readLine(), /^\{"type":"Hello"/);
    const enc = new TextEncoder();
    await w.write(enc.encode(`{"type":"Hello","vm_id":"${VM}","guestd_version":"x"}\n`)); // wrong direction
    await w.write(enc.encode(`${"x".repeat(70_000)}\n`)); // over the line cap
    await w.write(enc.encode(`{"type":"Ping","__proto__":{}}\n{"type":"Ping"}\n`));
    assert.equal(await readLine(), `{"type":"Pong"}`);
    r.releaseLock();
    w.releaseLock();
  } finally {
    conn.close();
    await s.cleanup();
  }
});

const WRAP_SH = `
echo "booting"
echo "${DEFAULT_START_MARKER}"
echo "noise inside the turn"
echo "key=\${API_KEY:-none}" > "$1/wrapped-env.tmp" && mv "$1/wrapped-env.tmp" "$1/wrapped-env"
while [ ! -e "$1/release-0" ]; do sleep 0.01; done
echo "${DEFAULT_END_MARKER}"
echo "between turns"
echo "${DEFAULT_START_MARKER}"
echo "${DEFAULT_END_MARKER}"
exit 3
`;

Deno.test("wrap mode with await-secrets: child starts on Secrets, markers make turns, drain is passive", async () => {
  const s = await _setup((dir) => ({
    kind: "wrap",
    argv: ["sh", `${dir}/wrap.sh`, dir],
    startMarker: DEFAULT_START_MARKER,
    endMarker: DEFAULT_END_MARKER,
    awaitSecrets: true,
  }), (dir) => {
    Deno.writeTextFileSync(`${dir}/wrap.sh`, WRAP_SH);
    return unix(dir);
  });
  const c = await connectTurnsUnix(`${s.dir}/turns.sock`, { logger: log });
  try {
    await c.ping();
    assert.equal(s.agent.engine.wrapSpawned, false);
    const started0 = c.waitFor(_is("TurnStarted", 0), 10_000);
    await c.send({ type: "Secrets", env: { API_KEY: "sk-wrap" } });
    await started0;
    const drained = c.drain("m-1", 10_000);
    while ((await Deno.stat(`${s.dir}/wrapped-env`).catch(() => null)) === null) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(await Deno.readTextFile(`${s.dir}/wrapped-env`), "key=sk-wrap\n");
    await Deno.writeTextFile(`${s.dir}/release-0`, "");
    const out = await drained;
    assert.equal(out.result, "quiescent");
    assert.equal(out.inFlightAtAck, 0);
    // Passive: the child's next turn is reported even though the gate is closed; then it exits with 3.
    await c.waitFor(_is("TurnEnded", 1), 10_000);
    assert.equal(await s.done, 3);
  } finally {
    c.close();
    await s.cleanup();
  }
});

Deno.test("a turn whose command cannot start still ends, and the next turn runs", async () => {
  const s = await _setup(() => ({ kind: "native", turnArgv: ["/nonexistent/turn-cmd"] }), unix);
  const c = await connectTurnsUnix(`${s.dir}/turns.sock`, { logger: log });
  try {
    const ended1 = c.waitFor(_is("TurnEnded", 1), 10_000);
    await c.send({ type: "RunTurn", turn_id: 0 });
    await c.send({ type: "RunTurn", turn_id: 1 });
    await ended1;
    assert.equal(s.agent.engine.inFlight, null);
  } finally {
    c.close();
    await s.cleanup();
  }
});
