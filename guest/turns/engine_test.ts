import assert from "node:assert/strict";
import { memoryLogger, silentLogger } from "../../core/log/mod.ts";
import { channelProof, parseChannelKey, verifyChannelProof } from "../../core/turns/mod.ts";
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
    if (a.kind === "close") return `${a.conn} close ${a.reason}`;
    if (a.kind === "fix-clock") return `fix-clock ${a.hostNs}`;
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

const KEY = parseChannelKey("ab".repeat(32));

/** A keyed engine whose challenge nonces are `n0…`, `n1…` (hex), and the host's proof for connection `conn`. */
function _keyed(over: Partial<TurnsEngineOptions> = {}) {
  let n = 0;
  const e = _engine({ channelKey: KEY, nonce: () => (n++).toString(16).padStart(64, "0"), ...over });
  const proof = (conn: number, epoch: number, opts: { key?: Uint8Array; timeNs?: bigint } = {}) => {
    const p = {
      vmId: VM,
      guestNonce: challenges.get(conn)!,
      hostNonce: "c".repeat(64),
      epoch,
      timeNs: opts.timeNs ?? 5_000n,
    };
    const mac = channelProof(opts.key ?? KEY, "host", p);
    return { type: "AuthProof" as const, nonce: p.hostNonce, epoch, time_ns: p.timeNs, mac };
  };
  const challenges = new Map<number, string>();
  const connect = (conn: number) => {
    const a = e.connected(conn);
    const ch = a.find((x) => x.kind === "send" && x.msg.type === "AuthChallenge");
    if (ch?.kind === "send" && ch.msg.type === "AuthChallenge") challenges.set(conn, ch.msg.nonce);
    return a;
  };
  const login = (conn: number, epoch = e.epoch) => {
    connect(conn);
    return e.received(conn, proof(conn, epoch));
  };
  return { e, proof, connect, login };
}

Deno.test("with a key: Hello then AuthChallenge; nothing but a valid AuthProof is acted on", async (t) => {
  await t.step("a RunTurn before the proof closes the connection and runs nothing", () => {
    const k = _keyed();
    assert.deepEqual(_s(k.connect(1)), ["1<Hello", "1<AuthChallenge"]);
    assert.deepEqual(_s(k.e.received(1, { type: "RunTurn", turn_id: 0 })), ["1 close unauthenticated"]);
    assert.deepEqual(k.e.queued, []);
    assert.equal(k.e.authenticatedConnections, 0);
  });
  await t.step("Secrets and Ping before the proof are refused the same way", () => {
    const k = _keyed();
    k.connect(1);
    assert.deepEqual(_s(k.e.received(1, { type: "Secrets", env: { A: "x" } })), ["1 close unauthenticated"]);
    k.connect(2);
    assert.deepEqual(_s(k.e.received(2, { type: "Ping" })), ["2 close unauthenticated"]);
  });
  await t.step("a proof made with another key is refused", () => {
    const k = _keyed();
    k.connect(1);
    const bad = k.proof(1, 0, { key: parseChannelKey("cd".repeat(32)) });
    assert.deepEqual(_s(k.e.received(1, bad)), ["1 close bad-proof"]);
  });
  await t.step("a proof replayed on another connection is refused (it answers the other nonce)", () => {
    const k = _keyed();
    k.connect(1);
    const p1 = k.proof(1, 0);
    assert.deepEqual(_s(k.e.received(1, p1)), ["1<AuthOk"]);
    k.connect(2);
    assert.deepEqual(_s(k.e.received(2, p1)), ["2 close bad-proof"]);
  });
  await t.step("a proof whose time was altered is refused (the clock fix-up is authenticated)", () => {
    const k = _keyed();
    k.connect(1);
    assert.deepEqual(_s(k.e.received(1, { ...k.proof(1, 0), time_ns: 1n })), ["1 close bad-proof"]);
  });
  await t.step("turn events go only to authenticated connections", () => {
    const k = _keyed();
    k.login(1);
    k.connect(2); // never proves
    assert.deepEqual(_s(k.e.received(1, { type: "RunTurn", turn_id: 0 })), ["1<TurnStarted 0", "start 0"]);
  });
  await t.step("the guest's AuthOk proves the key back", () => {
    const k = _keyed();
    k.connect(1);
    const p = k.proof(1, 0);
    const ok = k.e.received(1, p)[0]!;
    assert.ok(ok.kind === "send" && ok.msg.type === "AuthOk");
    const input = { vmId: VM, guestNonce: "0".repeat(64), hostNonce: p.nonce, epoch: 0, timeNs: p.time_ns };
    assert.ok(verifyChannelProof(KEY, "guest", input, ok.msg.mac));
    assert.ok(!verifyChannelProof(KEY, "host", input, ok.msg.mac));
  });
});

Deno.test("after a restore: the host proving the next epoch gets Resumed, the clock fix-up, then the replay", () => {
  const k = _keyed();
  k.login(1);
  k.e.received(1, { type: "DrainRequest", deadline_ms: 10 });
  k.e.received(1, { type: "RunTurn", turn_id: 7 });
  k.e.disconnected(1); // the source's connection died with the snapshot
  assert.deepEqual(_s(k.connect(2)), ["2<Hello", "2<AuthChallenge"]);
  const a = k.e.received(2, k.proof(2, 1, { timeNs: 9_000_000n }));
  assert.deepEqual(_s(a), ["2<AuthOk", "2<Resumed", "fix-clock 9000000", "2<TurnStarted 7", "start 7"]);
  const resumed = a[1]!;
  assert.ok(resumed.kind === "send" && resumed.msg.type === "Resumed" && typeof resumed.msg.ts === "bigint");
  assert.equal(k.e.epoch, 1);
});

Deno.test("a restore proven while the drainer's connection still looks open reopens the gate for both", () => {
  const k = _keyed();
  k.login(1); // e.g. the source's TCP connection, which the restored guest cannot know is dead yet
  k.e.received(1, { type: "DrainRequest", deadline_ms: 10 });
  k.e.received(1, { type: "RunTurn", turn_id: 0 });
  k.connect(2);
  assert.deepEqual(_s(k.e.received(2, k.proof(2, 1))), [
    "2<AuthOk",
    "2<Resumed",
    "fix-clock 5000",
    "1<TurnStarted 0",
    "2<TurnStarted 0",
    "start 0",
  ]);
  assert.equal(k.e.gateOpen, true);
});

Deno.test("while drained, only a higher epoch reopens the gate: same epoch is a reconnection, lower is stale", () => {
  const k = _keyed({ epoch: 3 });
  k.login(1);
  k.e.received(1, { type: "DrainRequest", deadline_ms: 10 });
  k.e.received(1, { type: "RunTurn", turn_id: 0 });
  assert.deepEqual(_s(k.login(2, 3)), ["2<AuthOk"]);
  assert.equal(k.e.gateOpen, false);
  assert.deepEqual(_s(k.login(3, 2)), ["3 close stale-epoch"]);
  assert.equal(k.e.gateOpen, false);
  assert.deepEqual(k.e.queued, [0]);
});

Deno.test("a proven higher epoch on a guest that was not drained: Resumed and the clock fix-up, no gate to reopen", () => {
  const k = _keyed();
  k.login(1);
  k.e.received(1, { type: "RunTurn", turn_id: 0 });
  assert.deepEqual(_s(k.login(2, 1)), ["2<AuthOk", "2<Resumed", "fix-clock 5000"]);
  assert.equal(k.e.epoch, 1);
  assert.equal(k.e.gateOpen, true);
  assert.equal(k.e.inFlight, 0);
});

Deno.test("without a key, a connection while drained never reopens the gate (only DrainCancel does)", () => {
  const e = _engine();
  e.connected(1);
  e.received(1, { type: "DrainRequest", deadline_ms: 10 });
  e.received(1, { type: "RunTurn", turn_id: 0 });
  assert.deepEqual(_s(e.connected(2)), ["2<Hello"]);
  assert.equal(e.gateOpen, false);
  assert.deepEqual(_s(e.received(2, { type: "DrainCancel" })), ["1<TurnStarted 0", "2<TurnStarted 0", "start 0"]);
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
  e.connected(1);
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
