import assert from "node:assert/strict";
import { memoryLogger, silentLogger } from "../../core/log/mod.ts";
import {
  DEFAULT_END_MARKER,
  DEFAULT_START_MARKER,
  type EngineAction,
  TurnsEngine,
  type TurnsEngineOptions,
} from "./engine.ts";

const VM = "7e57a1b2-0000-4000-8000-0123456789ab";
const WRAP = { startMarker: DEFAULT_START_MARKER, endMarker: DEFAULT_END_MARKER, awaitSecrets: false };

function _engine(over: Partial<TurnsEngineOptions> = {}): TurnsEngine {
  let t = 1_000n;
  return new TurnsEngine({
    vmId: VM,
    guestdVersion: "0.1.0",
    mode: "native",
    now: () => t++,
    logger: silentLogger(),
    ...over,
  });
}

/** Actions as short strings: `1<TurnStarted 3`, `start 3`, `spawn {K}`. */
function _s(actions: EngineAction[]): string[] {
  return actions.map((a) => {
    if (a.kind === "start-turn") return `start ${a.turnId}`;
    if (a.kind === "spawn-wrap") return `spawn ${Object.keys(a.env).join(",")}`;
    const m = a.msg;
    const arg = "turn_id" in m ? ` ${m.turn_id}` : "in_flight" in m ? ` ${m.in_flight}` : "";
    return `${a.conn}<${m.type}${arg}`;
  });
}

Deno.test("Hello is the first message on every connection, a new one included", () => {
  const e = _engine();
  const a = e.connected(1);
  assert.deepEqual(a, [{ kind: "send", conn: 1, msg: { type: "Hello", vm_id: VM, guestd_version: "0.1.0" } }]);
  e.disconnected(1);
  assert.deepEqual(_s(e.connected(2)), ["2<Hello"]);
});

Deno.test("Ping is answered with Pong on the same connection; Pong is ignored", () => {
  const e = _engine();
  e.connected(1);
  e.connected(2);
  assert.deepEqual(_s(e.received(2, { type: "Ping" })), ["2<Pong"]);
  assert.deepEqual(e.received(1, { type: "Pong" }), []);
});

Deno.test("RunTurn starts the turn: TurnStarted to every connection, then the process; TurnEnded on exit", () => {
  const e = _engine();
  e.connected(1);
  e.connected(2);
  assert.deepEqual(_s(e.received(1, { type: "RunTurn", turn_id: 0 })), [
    "1<TurnStarted 0",
    "2<TurnStarted 0",
    "start 0",
  ]);
  assert.equal(e.inFlight, 0);
  assert.deepEqual(_s(e.turnExited(0, 0)), ["1<TurnEnded 0", "2<TurnEnded 0"]);
  assert.equal(e.inFlight, null);
});

Deno.test("turns run one at a time, in order", () => {
  const e = _engine();
  e.connected(1);
  e.received(1, { type: "RunTurn", turn_id: 0 });
  assert.deepEqual(_s(e.received(1, { type: "RunTurn", turn_id: 1 })), []);
  assert.deepEqual(_s(e.received(1, { type: "RunTurn", turn_id: 2 })), []);
  assert.deepEqual(e.queued, [1, 2]);
  assert.deepEqual(_s(e.turnExited(0, 0)), ["1<TurnEnded 0", "1<TurnStarted 1", "start 1"]);
  assert.deepEqual(_s(e.turnExited(1, 0)), ["1<TurnEnded 1", "1<TurnStarted 2", "start 2"]);
});

Deno.test("drain between turns: DrainAck in_flight null; a later turn is queued, not run", () => {
  const e = _engine();
  e.connected(1);
  assert.deepEqual(_s(e.received(1, { type: "DrainRequest", deadline_ms: 5000 })), ["1<DrainAck null"]);
  assert.equal(e.gateOpen, false);
  assert.deepEqual(_s(e.received(1, { type: "RunTurn", turn_id: 0 })), []);
  assert.deepEqual(e.queued, [0]);
});

Deno.test("drain while a turn runs: DrainAck names it, it finishes, the next waits behind the gate", () => {
  const e = _engine();
  e.connected(1);
  e.received(1, { type: "RunTurn", turn_id: 4 });
  assert.deepEqual(_s(e.received(1, { type: "DrainRequest", deadline_ms: 5000 })), ["1<DrainAck 4"]);
  e.received(1, { type: "RunTurn", turn_id: 5 });
  assert.deepEqual(_s(e.turnExited(4, 0)), ["1<TurnEnded 4"]);
  assert.deepEqual(e.queued, [5]);
  assert.equal(e.inFlight, null);
});

Deno.test("DrainCancel reopens the gate and replays the queue in order", () => {
  const e = _engine();
  e.connected(1);
  e.received(1, { type: "DrainRequest", deadline_ms: 10 });
  e.received(1, { type: "RunTurn", turn_id: 0 });
  e.received(1, { type: "RunTurn", turn_id: 1 });
  assert.deepEqual(_s(e.received(1, { type: "DrainCancel" })), ["1<TurnStarted 0", "start 0"]);
  assert.deepEqual(_s(e.turnExited(0, 1)), ["1<TurnEnded 0", "1<TurnStarted 1", "start 1"]);
});

Deno.test("after a restore: the new connection gets Hello, Resumed, then the queue replays", () => {
  const e = _engine();
  e.connected(1);
  e.received(1, { type: "DrainRequest", deadline_ms: 10 });
  e.received(1, { type: "RunTurn", turn_id: 7 });
  e.disconnected(1); // the source's connection died with the snapshot
  const a = e.connected(2);
  assert.deepEqual(_s(a), ["2<Hello", "2<Resumed", "2<TurnStarted 7", "start 7"]);
  const resumed = a[1]!;
  assert.ok(resumed.kind === "send" && resumed.msg.type === "Resumed" && typeof resumed.msg.ts === "bigint");
});

Deno.test("a new connection while the drainer's still looks open counts as the restore too", () => {
  const e = _engine();
  e.connected(1); // e.g. the source's TCP connection, which the restored guest cannot know is dead yet
  e.received(1, { type: "DrainRequest", deadline_ms: 10 });
  e.received(1, { type: "RunTurn", turn_id: 0 });
  assert.deepEqual(_s(e.connected(2)), ["2<Hello", "2<Resumed", "1<TurnStarted 0", "2<TurnStarted 0", "start 0"]);
  assert.equal(e.gateOpen, true);
});

Deno.test("a new connection with the gate open gets Hello only", () => {
  const e = _engine();
  e.connected(1);
  e.received(1, { type: "RunTurn", turn_id: 0 });
  assert.deepEqual(_s(e.connected(2)), ["2<Hello"]);
});

Deno.test("DrainCancel with the gate open changes nothing; a repeated DrainRequest re-acks", () => {
  const e = _engine();
  e.connected(1);
  assert.deepEqual(e.received(1, { type: "DrainCancel" }), []);
  e.received(1, { type: "RunTurn", turn_id: 0 });
  assert.deepEqual(_s(e.received(1, { type: "DrainRequest", deadline_ms: 1 })), ["1<DrainAck 0"]);
  e.turnExited(0, 0);
  assert.deepEqual(_s(e.received(1, { type: "DrainRequest", deadline_ms: 1 })), ["1<DrainAck null"]);
});

Deno.test("a RunTurn whose id is not above the highest seen is ignored (duplicates never run twice)", () => {
  const { logger, lines } = memoryLogger();
  const e = _engine({ logger });
  e.connected(1);
  e.received(1, { type: "RunTurn", turn_id: 3 });
  assert.deepEqual(e.received(1, { type: "RunTurn", turn_id: 3 }), []);
  assert.deepEqual(e.received(1, { type: "RunTurn", turn_id: 2 }), []);
  assert.equal(lines.filter((l) => l.event === "run_turn_refused").length, 2);
});

Deno.test("secrets reach native turn processes; later Secrets add to them", () => {
  const e = _engine();
  e.connected(1);
  e.received(1, { type: "Secrets", env: { A: "1", B: "2" } });
  e.received(1, { type: "Secrets", env: { B: "3" } });
  const a = e.received(1, { type: "RunTurn", turn_id: 0 }).find((x) => x.kind === "start-turn");
  assert.deepEqual(a, { kind: "start-turn", turnId: 0, env: { A: "1", B: "3" } });
});

Deno.test("secrets values never reach the log", () => {
  const { logger, lines } = memoryLogger();
  const e = _engine({ logger });
  e.received(1, { type: "Secrets", env: { API_KEY: "sk-very-secret" } });
  assert.ok(lines.length > 0);
  assert.ok(!JSON.stringify(lines).includes("sk-very-secret"));
});

Deno.test("wrap mode: markers open and close turns with ids from 0; noise between them goes to the log", () => {
  const { logger, lines } = memoryLogger();
  const e = _engine({ mode: WRAP, logger });
  assert.deepEqual(_s(e.start()), ["spawn "]);
  e.connected(1);
  assert.deepEqual(_s(e.wrapLine("booting")), []);
  assert.deepEqual(_s(e.wrapLine(DEFAULT_START_MARKER)), ["1<TurnStarted 0"]);
  assert.deepEqual(_s(e.wrapLine("thinking...")), []);
  assert.deepEqual(_s(e.wrapLine(` ${DEFAULT_END_MARKER}`)), []); // not equal to the marker: noise
  assert.deepEqual(_s(e.wrapLine(DEFAULT_END_MARKER)), ["1<TurnEnded 0"]);
  assert.deepEqual(_s(e.wrapLine(DEFAULT_START_MARKER)), ["1<TurnStarted 1"]);
  assert.deepEqual(
    lines.filter((l) => l.event === "wrap_output").map((l) => l.line),
    ["booting", "thinking...", ` ${DEFAULT_END_MARKER}`],
  );
});

Deno.test("wrap mode: custom markers replace the defaults", () => {
  const e = _engine({ mode: { startMarker: "BEGIN", endMarker: "END", awaitSecrets: false } });
  e.connected(1);
  assert.deepEqual(_s(e.wrapLine(DEFAULT_START_MARKER)), []);
  assert.deepEqual(_s(e.wrapLine("BEGIN")), ["1<TurnStarted 0"]);
  assert.deepEqual(_s(e.wrapLine("END")), ["1<TurnEnded 0"]);
});

Deno.test("wrap mode: unbalanced markers are logged and change nothing", () => {
  const e = _engine({ mode: WRAP });
  e.connected(1);
  assert.deepEqual(e.wrapLine(DEFAULT_END_MARKER), []);
  e.wrapLine(DEFAULT_START_MARKER);
  assert.deepEqual(e.wrapLine(DEFAULT_START_MARKER), []);
  assert.equal(e.inFlight, 0);
});

Deno.test("wrap mode: drain is passive — acked with the open turn, later turns are reported, not gated", () => {
  const e = _engine({ mode: WRAP });
  e.connected(1);
  e.wrapLine(DEFAULT_START_MARKER);
  assert.deepEqual(_s(e.received(1, { type: "DrainRequest", deadline_ms: 1 })), ["1<DrainAck 0"]);
  assert.deepEqual(_s(e.wrapLine(DEFAULT_END_MARKER)), ["1<TurnEnded 0"]);
  assert.deepEqual(_s(e.wrapLine(DEFAULT_START_MARKER)), ["1<TurnStarted 1"]);
  assert.deepEqual(e.received(1, { type: "RunTurn", turn_id: 9 }), []);
});

Deno.test("wrap mode with await-secrets: the child starts only on the first Secrets, with them", () => {
  const e = _engine({ mode: { ...WRAP, awaitSecrets: true } });
  assert.deepEqual(e.start(), []);
  e.connected(1);
  assert.equal(e.wrapSpawned, false);
  assert.deepEqual(e.received(1, { type: "Secrets", env: { API_KEY: "k" } }), [{
    kind: "spawn-wrap",
    env: { API_KEY: "k" },
  }]);
  assert.deepEqual(e.received(1, { type: "Secrets", env: { API_KEY: "k2" } }), []);
});

Deno.test("wrap mode: a child that exits inside a turn ends it", () => {
  const e = _engine({ mode: WRAP });
  e.connected(1);
  e.wrapLine(DEFAULT_START_MARKER);
  assert.deepEqual(_s(e.wrapExited(1)), ["1<TurnEnded 0"]);
  assert.deepEqual(e.wrapExited(1), []);
});
