// The orchestrator over a fake host and a real guest turn agent (native mode, real turn processes, unix sockets,
// the VM's channel key). The fake host stands in for libvirt: a snapshot ends the source's channel, and "the
// restored target" is the same agent reached on a new connection that proves the next epoch (its memory is what a
// restore brings back). Turns wait for release files, so "a turn is running" is a fact, not a sleep.
import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import type { Phase } from "../../core/migration/mod.ts";
import { type GuestMessage, newChannelKey } from "../../core/turns/mod.ts";
import { TurnsAgent } from "../../guest/turns/agent.ts";
import { listenUnix } from "../../guest/turns/transport.ts";
import { connectTurnsUnix } from "../guest/turns_connect.ts";
import type { TurnsClient } from "../guest/turns_client.ts";
import { migrate, type MigrationHost } from "./orchestrator.ts";

const VM = "7e57a1b2-0000-4000-8000-0123456789ab";
const log = silentLogger();
const TURN_SH = `echo "$SLEEPWALK_TURN_ID" >> "$1/ran"
while [ ! -e "$1/release-$SLEEPWALK_TURN_ID" ]; do sleep 0.01; done
`;

async function _vm() {
  const dir = await Deno.makeTempDir({ prefix: "bcd-mig-" });
  await Deno.writeTextFile(`${dir}/turn.sh`, TURN_SH);
  const key = newChannelKey();
  const stop = new AbortController();
  const agent = new TurnsAgent({
    vmId: VM,
    guestdVersion: "0.1.0",
    mode: { kind: "native", turnArgv: ["sh", `${dir}/turn.sh`, dir] },
    listeners: [listenUnix(`${dir}/turns.sock`)],
    logger: log,
    signal: stop.signal,
    channelKey: key,
    setClock: () => Promise.resolve(),
  });
  const done = agent.run();
  const connect = (restore = false) => connectTurnsUnix(`${dir}/turns.sock`, { logger: log, channelKey: key, restore });
  const release = (id: number) => Deno.writeTextFile(`${dir}/release-${id}`, "");
  const ran = async () => {
    try {
      return (await Deno.readTextFile(`${dir}/ran`)).trim().split("\n").filter((l) => l !== "").map(Number);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return [];
      throw e;
    }
  };
  const cleanup = async () => {
    stop.abort();
    await done;
    await Deno.remove(dir, { recursive: true });
  };
  return { dir, agent, connect, release, ran, cleanup };
}

/** A fake host recording its calls; `fail` names the call that throws. */
function _host(source: () => TurnsClient, fail: string | null = null) {
  const calls: string[] = [];
  const call = (name: string, fn?: () => void) => () => {
    calls.push(name);
    if (fail === name) return Promise.reject(new Error(`${name} failed (injected)`));
    fn?.();
    return Promise.resolve();
  };
  const host: MigrationHost = {
    snapshot: call("snapshot", () => source().close()), // the source VM stops: its channel dies
    transfer: call("transfer"),
    restoreTarget: call("restoreTarget"),
    discardTarget: call("discardTarget"),
    restoreSource: call("restoreSource"),
    cleanup: call("cleanup"),
  };
  return { host, calls };
}

const _is = (type: GuestMessage["type"], id?: number) => (m: GuestMessage) =>
  m.type === type && (id === undefined || ("turn_id" in m && m.turn_id === id));

Deno.test("migrate: turns keep the race rule across the move; the queue replays on the target; the source is cleaned up", async () => {
  const vm = await _vm();
  const src = await vm.connect();
  try {
    const started0 = src.waitFor(_is("TurnStarted", 0), 10_000);
    await src.send({ type: "RunTurn", turn_id: 0 });
    await started0;
    const { host, calls } = _host(() => src);
    const phases: [Phase, number][] = [];
    let target: TurnsClient | undefined;
    const moving = migrate({
      migrationId: "m-1",
      source: src,
      host,
      channels: {
        target: async () => (target = await vm.connect(true)),
        sourceRestored: () => Promise.reject(new Error("not expected")),
      },
      drainDeadlineMs: 60_000,
      log,
      onPhase: (p, g) => phases.push([p, g]),
    });
    // Turn 0 is in flight at the drain: it wins (race rule); turn 1 arrives after the DrainRequest and is queued.
    await src.waitFor(_is("DrainAck"), 10_000).catch(() => {});
    await src.send({ type: "RunTurn", turn_id: 1 });
    await vm.release(0);
    const r = await moving;
    assert.equal(r.outcome, "migrated", JSON.stringify(r.steps));
    assert.deepEqual(calls, ["snapshot", "transfer", "restoreTarget", "cleanup"]);
    assert.deepEqual(r.events.map((e) => e.to), [
      "Intent",
      "Draining",
      "Quiescent",
      "Snapshotting",
      "Transferring",
      "Restoring",
      "CutOver",
      "Cleanup",
      "Stable",
    ]);
    assert.deepEqual(phases.map(([p]) => p), [
      "Draining",
      "Quiescent",
      "Snapshotting",
      "Transferring",
      "Restoring",
      "CutOver",
      "Cleanup",
      "Stable",
    ]);
    assert.deepEqual(phases.map(([, g]) => g), [2, 3, 4, 5, 6, 7, 8, 0]);
    assert.ok(target && r.channel === target);
    assert.ok(target.resumed !== null, "the target proved the restore epoch and got Resumed");
    assert.equal(vm.agent.engine.epoch, 1);
    // The queued turn runs on the target; a new one too; none ran twice.
    assert.equal(vm.agent.engine.inFlight, 1, "the queued turn started on the target at Resumed");
    const ended1 = target.waitFor(_is("TurnEnded", 1), 10_000);
    await vm.release(1);
    await ended1;
    const ended2 = target.waitFor(_is("TurnEnded", 2), 10_000);
    await target.send({ type: "RunTurn", turn_id: 2 });
    await vm.release(2);
    await ended2;
    assert.deepEqual(await vm.ran(), [0, 1, 2]);
    target.close();
  } finally {
    src.close();
    await vm.cleanup();
  }
});

Deno.test("migrate: a drain that misses its deadline aborts with the reason; the source keeps running", async () => {
  const vm = await _vm();
  const src = await vm.connect();
  try {
    const started0 = src.waitFor(_is("TurnStarted", 0), 10_000);
    await src.send({ type: "RunTurn", turn_id: 0 });
    await started0;
    const { host, calls } = _host(() => src);
    // Turn 0 is held until the drain has given up, whatever the deadline.
    const r = await migrate({
      migrationId: "m-2",
      source: src,
      host,
      channels: {
        target: () => Promise.reject(new Error("no")),
        sourceRestored: () => Promise.reject(new Error("no")),
      },
      drainDeadlineMs: 50,
      log,
    });
    assert.equal(r.outcome, "aborted");
    assert.equal(r.reason, "turn-in-flight-too-long");
    assert.deepEqual(calls, [], "nothing was snapshotted");
    assert.deepEqual(r.events.map((e) => `${e.to}:${e.via}`), ["Intent:advance", "Draining:advance", "Stable:abort"]);
    await src.ping(); // DrainCancel was handled: the gate is open again
    assert.equal(vm.agent.engine.gateOpen, true);
    const ended1 = src.waitFor(_is("TurnEnded", 1), 10_000);
    await src.send({ type: "RunTurn", turn_id: 1 });
    await vm.release(0);
    await vm.release(1);
    await ended1;
    assert.deepEqual(await vm.ran(), [0, 1]);
  } finally {
    src.close();
    await vm.cleanup();
  }
});

Deno.test("migrate: failures after Snapshotting resume on the source, by the failed step", async (t) => {
  for (const fail of ["snapshot", "transfer", "restoreTarget"]) {
    await t.step(`${fail} fails`, async () => {
      const vm = await _vm();
      const src = await vm.connect();
      try {
        const { host, calls } = _host(() => src, fail);
        let restored: TurnsClient | undefined;
        const r = await migrate({
          migrationId: `m-${fail}`,
          source: src,
          host,
          channels: {
            target: () => Promise.reject(new Error("the target never answered")),
            sourceRestored: async () => (restored = await vm.connect(true)),
          },
          drainDeadlineMs: 60_000,
          log,
        });
        assert.equal(r.outcome, "resumed-on-source", `${r.outcome} ${r.reason} ${JSON.stringify(r.steps)}`);
        assert.match(r.reason ?? "", /failed/);
        assert.equal(r.events.at(-1)?.via, "resume-on-source");
        const ch = fail === "snapshot" ? src : restored!;
        assert.ok(r.channel === ch);
        if (fail === "snapshot") assert.deepEqual(calls, ["snapshot"]);
        else assert.ok(calls.includes("restoreSource") && !calls.includes("cleanup"), calls.join());
        if (fail === "restoreTarget") assert.ok(!calls.includes("discardTarget"), "the target never started");
        // The VM takes turns again where it runs.
        const ended = ch.waitFor(_is("TurnEnded", 0), 10_000);
        await ch.send({ type: "RunTurn", turn_id: 0 });
        await vm.release(0);
        await ended;
        assert.deepEqual(await vm.ran(), [0]);
        restored?.close();
      } finally {
        src.close();
        await vm.cleanup();
      }
    });
  }
  await t.step("the target started but never resumed: it is discarded, then the source resumes", async () => {
    const vm = await _vm();
    const src = await vm.connect();
    try {
      const { host, calls } = _host(() => src);
      let restored: TurnsClient | undefined;
      const r = await migrate({
        migrationId: "m-no-resume",
        source: src,
        host,
        channels: {
          target: () => Promise.reject(new Error("no Resumed within the deadline")),
          sourceRestored: async () => (restored = await vm.connect(true)),
        },
        drainDeadlineMs: 60_000,
        log,
      });
      assert.equal(r.outcome, "resumed-on-source");
      assert.deepEqual(calls, ["snapshot", "transfer", "restoreTarget", "discardTarget", "restoreSource"]);
      restored?.close();
    } finally {
      src.close();
      await vm.cleanup();
    }
  });
});

Deno.test("migrate: a stray connection while the guest is quiescent is refused and the gate stays closed", async () => {
  const vm = await _vm();
  const src = await vm.connect();
  try {
    const stray: string[] = [];
    const { host } = _host(() => src);
    const snapshot = host.snapshot;
    host.snapshot = async () => {
      // Quiescent, about to snapshot: a peer on the guest's network connects and sends RunTurn, no key.
      const conn = await Deno.connect({ transport: "unix", path: `${vm.dir}/turns.sock` });
      const w = conn.writable.getWriter();
      await w.write(new TextEncoder().encode(`{"type":"RunTurn","turn_id":99}\n`));
      for await (const chunk of conn.readable) stray.push(new TextDecoder().decode(chunk));
      assert.equal(vm.agent.engine.gateOpen, false);
      assert.deepEqual(vm.agent.engine.queued, []);
      await snapshot();
    };
    let target: TurnsClient | undefined;
    const r = await migrate({
      migrationId: "m-stray",
      source: src,
      host,
      channels: { target: async () => (target = await vm.connect(true)), sourceRestored: () => Promise.reject() },
      drainDeadlineMs: 60_000,
      log,
    });
    assert.equal(r.outcome, "migrated");
    assert.ok(!stray.join("").includes("Resumed"), stray.join(""));
    assert.deepEqual(await vm.ran(), []);
    target?.close();
  } finally {
    src.close();
    await vm.cleanup();
  }
});
