/**
 * The crash campaign (`deno task test:crash`): a child process ({@link ./crash_child.ts}) accepts a stream of
 * commands of every flag mix and performs fake side effects that record themselves in a separate append-only
 * file; it is SIGKILLed at random points (at named kill points: after open, after acks, after recovery, between
 * `accepted` and the effect, between `running` and the effect, between the effect and `done`, after `done`, after
 * an event; and at random times). After each restart the journal is resolved and the gateway (this file) redelivers
 * every command without a result, plus duplicates. Self-terminating effects end the child (a reboot: the boot id
 * changes); some kills also change the boot id (power loss).
 *
 * Asserts over at least `BCD_CRASH_KILLS` (default 200) kills: no non-retry-safe effect ran twice, every accepted
 * command ends with exactly one result, event sequences have no gap and no duplicate. Prints the figures.
 *
 * Run as a `deno test` file so its summary line counts in `make test`; not named `_test.ts` so the plain
 * `deno task test` run does not include it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Journal } from "../mod.ts";
import type { Plan } from "./crash_child.ts";
import { mulberry32 as rng } from "../../rand/mulberry32.ts";

const KILLS = Number(Deno.env.get("BCD_CRASH_KILLS") ?? "200");
const SEED = Number(Deno.env.get("BCD_CRASH_SEED") ?? Date.now() % 1_000_000);
const MAX_REDELIVER = 8;
/** A child that neither finishes nor reaches its kill point within this long is a failure, not a kill. */
const WATCHDOG_MS = 30_000;
const CHILD = new URL("./crash_child.ts", import.meta.url).pathname;

const KINDS = [
  { kind: "node.reboot", retrySafe: true, selfTerminating: true },
  { kind: "boot.kexec", retrySafe: false, selfTerminating: true },
  { kind: "inventory.refresh", retrySafe: true, selfTerminating: false },
  { kind: "gpu.reset", retrySafe: false, selfTerminating: false },
];

interface Cmd {
  id: string;
  kind: string;
  retrySafe: boolean;
  selfTerminating: boolean;
}

Deno.test(`crash campaign: at least ${KILLS} SIGKILLs, at-most-once effects, one result each, gapless events`, async () => {
  const rand = rng(SEED);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const root = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "bcd-crash-" });
  const dataDir = join(root, "data");
  const effectsPath = join(root, "effects.log");
  const bootIdFile = join(root, "boot_id");
  const planPath = join(root, "plan.json");
  await Deno.writeTextFile(bootIdFile, crypto.randomUUID());
  const started = performance.now();

  const cmds = new Map<string, Cmd>();
  const results = new Map<string, Set<string>>();
  const events = new Map<number, string>();
  const toAck = new Set<string>();
  let journalId = "";
  let nextId = 0;
  const fig = {
    seed: SEED,
    kills: 0,
    killsAt: {} as Record<string, number>,
    timedKills: 0,
    starts: 0,
    selfTerminations: 0,
    powerLossReboots: 0,
    deliveries: 0,
    duplicateDeliveries: 0,
    resends: 0,
    reattaches: 0,
    reexecutions: 0,
    settledRebooted: 0,
    settledInterrupted: 0,
    effects: 0,
    eventsSeen: 0,
    rebootedWithoutEffect: 0,
    quiesceStarts: 0,
  };

  async function start(plan: Plan, killAt: number, killAfterMs: number | null): Promise<"killed" | 77 | 0> {
    await Deno.writeTextFile(planPath, JSON.stringify(plan));
    fig.starts++;
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        `--allow-read=${root}`,
        `--allow-write=${root}`,
        "--allow-env=NODE_V8_COVERAGE",
        "--allow-sys=hostname",
        CHILD,
        "--data-dir",
        dataDir,
        "--effects",
        effectsPath,
        "--boot-id-file",
        bootIdFile,
        "--plan",
        planPath,
        "--kill-at",
        String(killAt),
      ],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let killedBy: string | null = null;
    const kill = (by: string) => {
      if (killedBy !== null) return;
      killedBy = by;
      try {
        child.kill("SIGKILL");
      } catch (e) {
        if (!(e instanceof TypeError)) throw e; // already exited
      }
    };
    const watchdog = setTimeout(() => kill("watchdog"), WATCHDOG_MS);
    const timer = killAfterMs === null ? null : setTimeout(() => kill("timer"), killAfterMs);
    const stderr = new Response(child.stderr).text();
    let buf = "";
    const dec = new TextDecoder();
    for await (const chunk of child.stdout) {
      buf += dec.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        onLine(line, kill);
      }
    }
    const status = await child.status;
    if (timer !== null) clearTimeout(timer);
    clearTimeout(watchdog);
    const err = await stderr;
    assert.notEqual(killedBy, "watchdog", `child start ${plan.startNo} hung for ${WATCHDOG_MS} ms:\n${err}`);
    if (status.signal === "SIGKILL") {
      // Counted only when the signal landed: a child may exit by itself (a reboot) before it arrives.
      fig.kills++;
      if (killedBy === "timer") fig.timedKills++;
      else fig.killsAt[killedBy!] = (fig.killsAt[killedBy!] ?? 0) + 1;
      return "killed";
    }
    if (status.code === 77) return 77;
    assert.equal(status.code, 0, `child exited ${status.code}:\n${err}`);
    return 0;
  }

  function onLine(line: string, kill: (by: string) => void): void {
    const [tag, a, b] = line.split(" ");
    switch (tag) {
      case "JID":
        journalId = a!;
        break;
      case "ACKS_APPLIED":
        toAck.clear();
        break;
      case "POINT":
        kill(a!);
        break;
      case "RESULT": {
        const set = results.get(a!) ?? new Set<string>();
        set.add(b!);
        results.set(a!, set);
        toAck.add(a!);
        break;
      }
      case "EVENT": {
        const seq = Number(a);
        const payload = line.split(" ").slice(2).join(" ");
        const prev = events.get(seq);
        assert.ok(prev === undefined || prev === payload, `event seq ${seq} seen as ${prev} and ${payload}`);
        events.set(seq, payload);
        break;
      }
      case "RESEND":
        fig.resends++;
        break;
      case "REATTACH":
        fig.reattaches++;
        break;
      case "REEXEC":
        fig.reexecutions++;
        break;
      case "SETTLED":
        if (b === "rebooted") fig.settledRebooted++;
        else fig.settledInterrupted++;
        break;
      case "EFFECT":
        fig.effects++;
        break;
    }
  }

  function plan(startNo: number, newCmds: number, duplicates: number, redeliver = MAX_REDELIVER): Plan {
    // Redeliver the oldest commands without a result, at most `redeliver` per start (the lanes' credits).
    const deliveries: Cmd[] = [];
    for (const c of cmds.values()) {
      if (deliveries.length >= redeliver) break;
      if (!results.has(c.id)) deliveries.push(c);
    }
    for (let i = 0; i < newCmds; i++) {
      const k = pick(KINDS);
      const c = { id: `c${String(nextId++).padStart(5, "0")}`, ...k };
      cmds.set(c.id, c);
      deliveries.push(c);
    }
    const done = [...results.keys()];
    for (let i = 0; i < duplicates && done.length > 0; i++) {
      deliveries.push(cmds.get(pick(done))!);
      fig.duplicateDeliveries++;
    }
    for (let i = deliveries.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [deliveries[i], deliveries[j]] = [deliveries[j]!, deliveries[i]!];
    }
    if (deliveries.length > 0 && rand() < 0.4) {
      // A duplicate right behind its original: another worker picks it up while the first is in flight.
      const at = Math.floor(rand() * deliveries.length);
      deliveries.splice(at + 1, 0, deliveries[at]!);
      fig.duplicateDeliveries++;
    }
    fig.deliveries += deliveries.length;
    const maxSeq = Math.max(0, ...events.keys());
    return {
      startNo,
      ackResults: [...toAck],
      ackEvents: journalId && rand() < 0.7 ? { journalId, seq: maxSeq } : null,
      deliveries,
      metrics: Math.floor(rand() * 3),
    };
  }

  async function rotateBoot(): Promise<void> {
    await Deno.writeTextFile(bootIdFile, crypto.randomUUID());
  }

  let startNo = 0;
  while (fig.kills < KILLS) {
    const p = plan(startNo++, 2 + Math.floor(rand() * 3), Math.floor(rand() * 2));
    const targeted = rand() < 0.75;
    const out = await start(
      p,
      targeted ? 1 + Math.floor(rand() * 14) : 0,
      targeted ? null : 5 + Math.floor(rand() * 75),
    );
    if (out === 77) {
      fig.selfTerminations++;
      await rotateBoot();
    } else if (out === "killed" && rand() < 0.1) {
      fig.powerLossReboots++;
      await rotateBoot();
    }
  }
  // Quiesce: no more kills; redeliver until every command has a result and every ack is applied.
  const quiesceLimit = 2 * cmds.size + 50; // every start settles a command or sets one up for the next
  for (let i = 0; i < quiesceLimit; i++) {
    fig.quiesceStarts = i;
    const missing = [...cmds.keys()].filter((id) => !results.has(id));
    if (missing.length === 0 && toAck.size === 0) break;
    const out = await start(plan(startNo++, 0, 0, 64), 0, null);
    if (out === 77) {
      fig.selfTerminations++;
      await rotateBoot();
    }
  }

  console.log(`crash campaign: seed ${SEED} (BCD_CRASH_SEED replays it), ${fig.kills} kills, ${cmds.size} commands`);

  // ---- the assertions ----
  const effectCount = new Map<string, number>();
  for (const line of (await Deno.readTextFile(effectsPath).catch(() => "")).split("\n")) {
    if (line === "") continue;
    const id = line.split(" ")[0]!;
    effectCount.set(id, (effectCount.get(id) ?? 0) + 1);
  }
  for (const [id, n] of effectCount) {
    const c = cmds.get(id)!;
    if (!c.retrySafe) assert.ok(n <= 1, `non-retry-safe ${c.kind} ${id} ran its effect ${n} times`);
  }
  const j = await Journal.open({ dataDir, bootId: await Deno.readTextFile(bootIdFile) });
  try {
    for (const c of cmds.values()) {
      const set = results.get(c.id);
      const entry = await j.get(c.id);
      assert.ok(set !== undefined, `command ${c.id} (${c.kind}) never got a result; journal: ${JSON.stringify(entry)}`);
      assert.equal(set.size, 1, `command ${c.id} got ${set.size} different results: ${[...set]}`);
      const [outcome] = [...set];
      assert.ok(entry !== null && entry.state === "done", `command ${c.id} is not done in the journal`);
      assert.equal(
        `${entry.result.state}:${entry.result.code ?? ""}`,
        outcome,
        `journal and gateway disagree on ${c.id}`,
      );
      const n = effectCount.get(c.id) ?? 0;
      if (outcome === "SUCCEEDED:" && !c.selfTerminating) assert.ok(n >= 1, `${c.id} SUCCEEDED without its effect`);
      // A reboot between `running` and the effect (a power loss, or another self-terminating command's effect in
      // the same batch) reads as the reboot the command caused: the seed's rule cannot tell them apart, which is
      // why `running` is written immediately before the effect. Counted, not failed.
      if (outcome === "SUCCEEDED:" && c.selfTerminating && n === 0) fig.rebootedWithoutEffect++;
    }
    const seqs = [...events.keys()].sort((x, y) => x - y);
    fig.eventsSeen = seqs.length;
    seqs.forEach((s, i) => assert.equal(s, i + 1, `event sequence has a gap or duplicate at ${s}`));
    assert.equal((await j.meta()).eventSeq, seqs.length, "every journaled event reached the gateway");
  } finally {
    await j.close();
  }
  const nonRetrySafeTwice = [...effectCount].filter(([id, n]) => !cmds.get(id)!.retrySafe && n > 1).length;
  const oneResult = [...cmds.keys()].filter((id) => results.get(id)?.size === 1).length;
  const secs = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    JSON.stringify({
      ...fig,
      commands: cmds.size,
      effectLines: [...effectCount.values()].reduce((x, y) => x + y, 0),
      maxEffectsNonRetrySafe: Math.max(
        0,
        ...[...effectCount].filter(([id]) => !cmds.get(id)!.retrySafe).map(([, n]) => n),
      ),
      seconds: Number(secs),
      checked: {
        nonRetrySafeEffectsRunTwice: nonRetrySafeTwice,
        commandsWithExactlyOneResult: `${oneResult}/${cmds.size}`,
        eventSeqGapsOrDuplicates: 0,
        eventsChecked: fig.eventsSeen,
      },
    }),
  );
  assert.ok(fig.kills >= KILLS);
  await Deno.remove(root, { recursive: true });
});
