import assert from "node:assert/strict";
import { Journal } from "../core/journal/mod.ts";
import { roleFlags } from "./permissions.ts";

/** Runs `bcd-node journal ...` with the node role's own permissions (plus the temp root). */
async function node(root: string, args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...roleFlags("node", { extraWrite: [root] }),
      new URL("./node.ts", import.meta.url).pathname,
      ...args,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, out: dec.decode(out.stdout), err: dec.decode(out.stderr) };
}

Deno.test("journal inspect prints meta, counts by state, unacked events by class and bounds, beside a live writer", async () => {
  const root = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "bcd-inspect-" });
  try {
    const j = await Journal.open({ dataDir: root, bootId: "b1", incarnation: "inc-live", nodeId: "node-7" });
    await j.accept("c1", { kind: "inventory.refresh", retrySafe: true, selfTerminating: false });
    await j.accept("c2", { kind: "gpu.reset", retrySafe: false, selfTerminating: false });
    await j.finish("c2", { state: "SUCCEEDED" });
    await j.appendEvent("metric", new Uint8Array(10));
    await j.appendEvent("result", new Uint8Array(20));
    await j.putSpec({ generation: 9, bytes: new Uint8Array(5), hash: "h9", signature: new Uint8Array(1) });
    const r = await node(root, ["journal", "inspect", "--data-dir", root]);
    assert.equal(r.code, 0, r.err);
    const v = JSON.parse(r.out);
    assert.equal(v.ok, true);
    assert.equal(v.meta.journal_id, j.journalId);
    assert.equal(v.meta.node_id, "node-7");
    assert.equal(v.meta.event_seq, 2);
    assert.deepEqual(v.commands, { accepted: 1, running: 0, done: 1, unacked_results: 1 });
    assert.deepEqual(v.events.metric, { count: 1, bytes: 10 + 64 });
    assert.deepEqual(v.events.result, { count: 1, bytes: 20 + 64 });
    assert.equal(v.bounds.max_unacked_events, 10_000);
    assert.equal(v.bounds.used_events, 2);
    assert.deepEqual(v.spec, { generation: 9, hash: "h9", bytes: 5, signed: true });
    assert.equal(v.lock.held, true);
    assert.match(v.lock.holder, /inc-live/);
    await j.close();
    const after = JSON.parse((await node(root, ["journal", "inspect", "--data-dir", root])).out);
    assert.equal(after.lock.held, false);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("journal inspect refuses a directory without a journal (exit 3) and a missing --data-dir (exit 2)", async () => {
  const root = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "bcd-inspect-" });
  try {
    const r = await node(root, ["journal", "inspect", "--data-dir", root]);
    assert.equal(r.code, 3, r.err);
    assert.equal(JSON.parse(r.out).reason, "no-journal");
    const u = await node(root, ["journal", "inspect"]);
    assert.equal(u.code, 2);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("journal reset-time-mark sets a wrong mark back (journal and identity.json); refused while a daemon holds the journal", async () => {
  const root = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "bcd-reset-mark-" });
  try {
    const far = Date.now() + 20 * 3_600_000;
    const j = await Journal.open({ dataDir: root, bootId: "b1", nodeId: "node-7" });
    await j.observeServerTime(far, "welcome");
    const locked = await node(root, ["journal", "reset-time-mark", "--data-dir", root]);
    assert.equal(locked.code, 3, locked.err);
    assert.equal(JSON.parse(locked.out).reason, "journal-locked");
    await j.close();
    const r = await node(root, ["journal", "reset-time-mark", "--data-dir", root, "--to", "1800000000000"]);
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(JSON.parse(r.out), { ok: true, old_mark: far, mark: 1_800_000_000_000 });
    assert.equal(JSON.parse(await Deno.readTextFile(`${root}/identity.json`)).server_time_mark, 1_800_000_000_000);
    const j2 = await Journal.open({ dataDir: root, bootId: "b2" });
    assert.equal((await j2.meta()).serverTimeMark, 1_800_000_000_000);
    await j2.close();
    const empty = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "bcd-reset-mark-" });
    const none = await node(empty, ["journal", "reset-time-mark", "--data-dir", empty]);
    await Deno.remove(empty, { recursive: true });
    assert.equal(none.code, 3);
    assert.equal(JSON.parse(none.out).reason, "no-journal");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
