/**
 * What one connection may cost the helper (issue 27, items 2–4 and 8's log): idle and partial-line deadlines with the
 * `closing` notice, eviction of the least active peer past the connection cap, the write stall, the client sending
 * again what a closed connection never had read, and the refusal log's burst. In process, the deadlines at their
 * defaults on a fake clock (`fixtures/clock`), so no test waits for them and none depends on the machine's speed; the
 * same attacks on a real `bcd-helper` process are `fixtures/testbed/e2e_helper_attack_test.ts`.
 */
import assert from "node:assert/strict";
import { HelperError } from "../../core/helper/mod.ts";
import { HelperClient } from "./client.ts";
import { IDLE_TIMEOUT_MS, PARTIAL_LINE_DEADLINE_MS, REFUSAL_LOG_BURST, WRITE_STALL_MS } from "./server.ts";
import { startTestHelper, TEST_BOOT_ID } from "./helper_testing.ts";
import { waitFor } from "../../fixtures/poll.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";

/** The server's watch interval at the default deadlines (a quarter of the shortest). */
const TICK_MS = Math.min(IDLE_TIMEOUT_MS, PARTIAL_LINE_DEADLINE_MS, WRITE_STALL_MS) / 4;

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Reads answer lines until the helper closes the connection. */
async function readToEnd(
  c: Deno.Conn,
): Promise<{ id: unknown; ok: boolean; error?: { code: string; message: string } }[]> {
  let text = "";
  const buf = new Uint8Array(65536);
  for (;;) {
    let n: number | null;
    try {
      n = await c.read(buf);
    } catch (e) {
      if (e instanceof Deno.errors.ConnectionReset) break;
      throw e;
    }
    if (n === null) break;
    text += dec.decode(buf.subarray(0, n));
  }
  return text.split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

function closeQuietly(c: Deno.Conn): void {
  try {
    c.close();
  } catch (e) {
    if (!(e instanceof Deno.errors.BadResource)) throw e;
  }
}

type Answer = { id: unknown; ok: boolean; result?: unknown; error?: { code: string; message: string } };

/** Reads `c` line by line: `next()` waits for one answer line; `toEnd()` for the rest, until the helper closes it. */
function answers(c: Deno.Conn) {
  let text = "";
  const buf = new Uint8Array(65536);
  const more = async (): Promise<boolean> => {
    let n: number | null;
    try {
      n = await c.read(buf);
    } catch (e) {
      if (e instanceof Deno.errors.ConnectionReset) return false;
      throw e;
    }
    if (n === null) return false;
    text += dec.decode(buf.subarray(0, n));
    return true;
  };
  return {
    async next(): Promise<Answer> {
      while (!text.includes("\n")) if (!(await more())) throw new Error(`closed before a line: ${text}`);
      const i = text.indexOf("\n");
      const line = text.slice(0, i);
      text = text.slice(i + 1);
      return JSON.parse(line);
    },
    async toEnd(): Promise<Answer[]> {
      while (await more());
      return text.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    },
  };
}

/** The rest of `c`'s answers until the helper closes it, advancing `clock` a watch tick at a time meanwhile. */
async function restOnClock(a: ReturnType<typeof answers>, clock: FakeClock, limitMs: number) {
  let lines: Answer[] | undefined;
  const reading = a.toEnd().then((l) => lines = l);
  const at = await clock.advanceUntil(() => lines !== undefined, { stepMs: TICK_MS, limitMs });
  return { lines: await reading, at };
}

Deno.test("an idle connection is ended with the closing notice after the idle timeout", async () => {
  const clock = new FakeClock();
  const h = await startTestHelper({ server: { clock } });
  try {
    const c = await Deno.connect({ transport: "unix", path: h.socket });
    await c.write(enc.encode('{"id":1,"op":"host.boot_id"}\n'));
    const a = answers(c);
    // The answer first (an event), then time: the idle timeout runs from the connection's last activity.
    assert.deepEqual(await a.next(), { id: 1, ok: true, result: { bootId: TEST_BOOT_ID } });
    const { lines, at } = await restOnClock(a, clock, 2 * IDLE_TIMEOUT_MS);
    closeQuietly(c);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.id, null);
    assert.equal(lines[0]!.error?.code, "closing");
    assert.match(lines[0]!.error!.message, new RegExp(`idle for ${IDLE_TIMEOUT_MS} ms`));
    assert.ok(at > IDLE_TIMEOUT_MS, `ended at ${at} ms, not before the idle timeout`);
  } finally {
    await h.close();
  }
});

Deno.test("a line begun and not finished within the deadline ends the connection", async () => {
  const clock = new FakeClock();
  const h = await startTestHelper({ server: { clock } });
  try {
    const c = await Deno.connect({ transport: "unix", path: h.socket });
    // A whole request and a begun one in one write: once the first is answered, the helper holds the begun line.
    await c.write(enc.encode('{"id":1,"op":"host.boot_id"}\n{"id":2,"op":"host.bo'));
    const a = answers(c);
    assert.equal((await a.next()).id, 1);
    const { lines, at } = await restOnClock(a, clock, 2 * IDLE_TIMEOUT_MS);
    closeQuietly(c);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.error?.code, "closing");
    assert.match(
      lines[0]!.error!.message,
      new RegExp(`a line begun was not finished in ${PARTIAL_LINE_DEADLINE_MS} ms`),
    );
    assert.ok(at > PARTIAL_LINE_DEADLINE_MS && at < IDLE_TIMEOUT_MS, `ended at ${at} ms: by the line's deadline`);
  } finally {
    await h.close();
  }
});

Deno.test("past the connection cap the least recently active peer is evicted for a newcomer", async () => {
  const h = await startTestHelper({ server: { maxConnections: 2 } });
  try {
    const older = await Deno.connect({ transport: "unix", path: h.socket });
    await waitFor(() => h.server.connections === 1, "the first peer is served");
    const newer = await Deno.connect({ transport: "unix", path: h.socket });
    await waitFor(() => h.server.connections === 2, "the second peer is served");
    // The node's call is a third connection: the oldest idle peer makes room, and the call is answered.
    assert.equal((await h.client.call("host.boot_id", {})).bootId, TEST_BOOT_ID);
    const evicted = await readToEnd(older);
    assert.equal(evicted.length, 1);
    assert.equal(evicted[0]!.error?.code, "closing");
    assert.match(evicted[0]!.error!.message, /evicted/);
    // The newer one is still served.
    await newer.write(enc.encode('{"id":5,"op":"host.boot_id"}\n'));
    const buf = new Uint8Array(4096);
    const n = await newer.read(buf);
    assert.deepEqual(JSON.parse(dec.decode(buf.subarray(0, n!)).trim()), {
      id: 5,
      ok: true,
      result: { bootId: TEST_BOOT_ID },
    });
    closeQuietly(older);
    closeQuietly(newer);
  } finally {
    await h.close();
  }
});

Deno.test("a newcomer is answered busy only when every peer has a request running", async () => {
  const h = await startTestHelper({ server: { maxConnections: 1 } });
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const orig = h.backends.rebooter.reboot;
  (h.backends.rebooter as { reboot: (r: string) => Promise<void> }).reboot = async (r) => {
    await gate;
    return orig(r);
  };
  const other = new HelperClient({ socket: h.socket });
  try {
    const first = h.client.call("node.reboot", { reason: "held" });
    await waitFor(() => h.logs.some((l) => l.msg === "helper: op" && l.op === "node.reboot"), "the reboot running");
    await assert.rejects(
      other.call("host.boot_id", {}),
      (e) => e instanceof HelperError && /busy|all busy/.test(e.message),
    );
    release();
    await first;
    assert.equal((await other.call("host.boot_id", {})).bootId, TEST_BOOT_ID, "the idle one is evicted now");
  } finally {
    release();
    other.close();
    await h.close();
  }
});

Deno.test("a peer that never reads its answers is closed after the write stall, its queue dropped", async () => {
  const clock = new FakeClock();
  const h = await startTestHelper({ server: { clock } });
  try {
    const c = await Deno.connect({ transport: "unix", path: h.socket });
    const flood = enc.encode("{}\n".repeat(200_000));
    const writing = (async () => {
      let o = 0;
      while (o < flood.length) o += await c.write(flood.subarray(o));
    })().catch((e) => {
      // The helper closed it (EPIPE, reset), or the test did, below, while a write was pending (BadResource, or
      // Interrupted: Deno cancels the pending write).
      if (
        !(e instanceof Deno.errors.BrokenPipe || e instanceof Deno.errors.ConnectionReset ||
          e instanceof Deno.errors.BadResource || e instanceof Deno.errors.Interrupted)
      ) throw e;
    });
    const stalled = () => h.logs.some((l) => l.msg === "helper: peer does not read its answers; closing");
    const at = await clock.advanceUntil(stalled, { stepMs: TICK_MS, limitMs: 4 * WRITE_STALL_MS });
    assert.ok(at > WRITE_STALL_MS, `closed at ${at} ms, not before the write stall`);
    await waitFor(() => h.server.connections === 0, "the peer closed");
    closeQuietly(c);
    await writing;
    assert.equal((await h.client.call("host.boot_id", {})).bootId, TEST_BOOT_ID);
  } finally {
    await h.close();
  }
});

Deno.test("refusals past the log burst are counted and logged once at close, not one line each", async () => {
  const h = await startTestHelper();
  try {
    const c = await Deno.connect({ transport: "unix", path: h.socket });
    await c.write(enc.encode("{}\n".repeat(50)));
    await c.closeWrite();
    const lines = await readToEnd(c);
    closeQuietly(c);
    assert.equal(lines.length, 50, "every refusal is still answered");
    await waitFor(() => h.logs.some((l) => l.msg === "helper: connection closed"), "the close");
    assert.equal(h.logs.filter((l) => l.msg === "helper: refused").length, REFUSAL_LOG_BURST);
    const summary = h.logs.find((l) => l.msg === "helper: refusals past the log burst were not logged");
    assert.equal(summary?.suppressed, 50 - REFUSAL_LOG_BURST);
  } finally {
    await h.close();
  }
});

Deno.test("the client sends again, once, a request on a connection the helper ended with closing before reading it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-helper-closing-" });
  const path = `${dir}/h.sock`;
  const l = Deno.listen({ transport: "unix", path });
  const seen: string[] = [];
  const serving = (async () => {
    for (const first of [true, false]) {
      const c = await l.accept();
      const buf = new Uint8Array(4096);
      const r = await c.read(buf);
      const line = dec.decode(buf.subarray(0, r ?? 0)).trim();
      seen.push(line);
      const id = (JSON.parse(line) as { id: number }).id;
      // The first connection is ended as the helper ends an idle one: the request was "not read".
      const answer = first
        ? { id: null, ok: false, error: { code: "closing", message: "helper: idle for 1 ms" } }
        : { id, ok: true, result: { bootId: "again" } };
      await c.write(enc.encode(JSON.stringify(answer) + "\n"));
      c.close();
    }
  })();
  const client = new HelperClient({ socket: path, defaultTimeoutMs: 10_000 });
  try {
    assert.deepEqual(await client.call("host.boot_id", {}), { bootId: "again" });
    assert.equal(seen.length, 2, "sent twice");
    assert.equal(seen[0], seen[1], "the same request");
  } finally {
    client.close();
    l.close();
    await serving;
    await Deno.remove(dir, { recursive: true });
  }
});
