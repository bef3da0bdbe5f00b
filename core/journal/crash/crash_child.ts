/**
 * The crash campaign's daemon stand-in: opens the journal, applies the gateway's acks, recovers, replays unacked
 * results and events (the `Hello`), then handles one batch of deliveries the way the command path does, with fake
 * side effects that append themselves to a separate file. It prints one line per fact the gateway would see.
 *
 * `--kill-at N` makes it stop at the N-th kill point (printing `POINT <name>`) and wait there for the SIGKILL.
 *
 * @module
 */
import { parseArgs } from "node:util";
import { CommandStateError, Journal, readBootId } from "../mod.ts";

interface Delivery {
  id: string;
  kind: string;
  retrySafe: boolean;
  selfTerminating: boolean;
}

/** What the campaign hands to one child start. */
export interface Plan {
  startNo: number;
  ackResults: string[];
  ackEvents: { journalId: string; seq: number } | null;
  deliveries: Delivery[];
  /** Metric events to append while working. */
  metrics: number;
}

const { values } = parseArgs({
  options: {
    "data-dir": { type: "string" },
    "effects": { type: "string" },
    "boot-id-file": { type: "string" },
    "plan": { type: "string" },
    "kill-at": { type: "string", default: "0" },
  },
});
const plan = JSON.parse(await Deno.readTextFile(values.plan!)) as Plan;
const killAt = Number(values["kill-at"]);
const enc = new TextEncoder();

function say(line: string): void {
  Deno.stdout.writeSync(enc.encode(line + "\n"));
}

let points = 0;
async function point(name: string): Promise<void> {
  points++;
  if (points !== killAt) return;
  say(`POINT ${name}`);
  setInterval(() => {}, 1 << 30);
  await new Promise(() => {});
}

function effect(id: string): void {
  const f = Deno.openSync(values.effects!, { append: true, create: true });
  f.writeSync(enc.encode(`${id} ${plan.startNo}\n`));
  f.syncDataSync();
  f.close();
}

const journal = await Journal.open({
  dataDir: values["data-dir"]!,
  bootId: await readBootId(values["boot-id-file"]!),
});
say(`JID ${journal.journalId}`);
await point("opened");
await journal.ackResults(plan.ackResults);
if (plan.ackEvents) await journal.ackEvents(plan.ackEvents.journalId, plan.ackEvents.seq);
say("ACKS_APPLIED");
await point("acked");
const hello = await journal.recover();
for (const e of hello.settled) say(`SETTLED ${e.id} ${e.result.rebooted ? "rebooted" : "interrupted"}`);
for (const e of hello.unackedResults) say(`RESULT ${e.id} ${e.result.state}:${e.result.code ?? ""}`);
for (const ev of await journal.unackedEvents({ limit: 100_000 })) {
  say(`EVENT ${ev.seq} ${new TextDecoder().decode(ev.payload)}`);
}
await point("recovered");

let evNo = 0;
async function event(cls: "metric" | "transition" | "result", what: string): Promise<void> {
  const payload = `${plan.startNo}.${evNo++}.${cls}.${what}`;
  const r = await journal.appendEvent(cls, enc.encode(payload));
  if (r.appended) say(`EVENT ${r.seq} ${payload}`);
  else say(`EVENT_DROPPED ${payload}`);
}

async function handle(d: Delivery): Promise<void> {
  const flags = { retrySafe: d.retrySafe, selfTerminating: d.selfTerminating };
  const r = await journal.resolve(d.id, flags);
  switch (r.action) {
    case "resend":
      say(`RESULT ${d.id} ${r.entry.result.state}:${r.entry.result.code ?? ""}`);
      say(`RESEND ${d.id}`);
      return;
    case "rebooted":
    case "interrupted":
      say(`RESULT ${d.id} ${r.result.state}:${r.result.code ?? ""}`);
      say(`SETTLED ${d.id} ${r.action}`);
      return;
    case "reattach":
      say(`REATTACH ${d.id}`);
      return;
    case "execute":
    case "reexecute":
      if (r.action === "reexecute") say(`REEXEC ${d.id}`);
      try {
        await journal.accept(d.id, { kind: d.kind, ...flags });
      } catch (e) {
        // A duplicate resolved in the same group as its original lost the race to accept: re-attach.
        if (e instanceof CommandStateError && e.reason === "in-flight") return say(`REATTACH ${d.id}`);
        if (e instanceof CommandStateError && e.reason === "already-done") return say(`RESEND ${d.id}`);
        throw e;
      }
      say(`ACKED ${d.id}`);
      await point("accepted");
      if (d.selfTerminating) {
        await journal.markRunning(d.id);
        await point("running");
      }
      effect(d.id);
      say(`EFFECT ${d.id}`);
      await point("effect");
      if (d.selfTerminating) {
        say(`REBOOT ${d.id}`);
        Deno.exit(77);
      }
      await journal.finish(d.id, { state: "SUCCEEDED", body: enc.encode(`result of ${d.id}`) });
      say(`RESULT ${d.id} SUCCEEDED:`);
      await point("finished");
      await event("transition", d.id);
      await point("event");
  }
}

// Three in flight at once, as lanes would: exercises group commit and re-attach of a duplicate delivery.
const queue = [...plan.deliveries];
let metrics = plan.metrics;
async function worker(): Promise<void> {
  for (let d = queue.shift(); d !== undefined; d = queue.shift()) {
    await handle(d);
    if (metrics-- > 0) await event("metric", "tick");
  }
}
await Promise.all([worker(), worker(), worker()]);
await journal.close();
say("IDLE");
