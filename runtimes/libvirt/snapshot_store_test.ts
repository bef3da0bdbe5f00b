/**
 * `restore_from` downloads on an injected clock: a peer that stops sending is `download-stalled` after a 2-minute window
 * moving less than 1 MiB (the instance waits and it is tried again a minute later), a redirect to plain http and a
 * digest mismatch fail the instance, and nothing is kept but a verified archive. The fetch is a test double whose body
 * stalls on demand, so nothing waits for real time.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";
import { SnapshotStore } from "./snapshot_store.ts";

const BYTES = new TextEncoder().encode("a snapshot archive");
const SHA = createHash("sha256").update(BYTES).digest("hex");

function ref(sha256 = SHA) {
  return {
    url: "https://snap.example/s.tar",
    sha256,
    runtime: "libvirt-kvm",
    includeMemory: false,
    cpuModel: "",
    sizeBytes: 0,
  };
}

/** A fetch whose body sends `first` and then waits, until aborted, when `stall`; the whole body otherwise. */
function stallingFetch(stall: { on: boolean }, sent: () => void): typeof fetch {
  return ((_url: string, init?: RequestInit) => {
    const signal = init!.signal!;
    let n = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (n++ === 0) {
          c.enqueue(stall.on ? BYTES.subarray(0, 4) : BYTES);
          sent();
          if (!stall.on) c.close();
          return;
        }
        return new Promise<void>((_, reject) => {
          const end = () => {
            c.error(signal.reason);
            reject(signal.reason);
          };
          if (signal.aborted) end();
          else signal.addEventListener("abort", end, { once: true });
        });
      },
    });
    return Promise.resolve(new Response(body, { status: 200 }));
  }) as typeof fetch;
}

Deno.test("SnapshotStore: a stalled download fails download-stalled, is reported for a minute, then tried again and kept once verified", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-snapstore-" });
  try {
    const clock = new FakeClock();
    const stall = { on: true };
    let onSent!: () => void;
    let sent = new Promise<void>((r) => onSent = r);
    const store = new SnapshotStore({ dir, clock, fetch: stallingFetch(stall, () => onSent()) });
    assert.equal(store.poll(ref()).state, "downloading");
    await sent;
    await clock.advance(120_000);
    await store.settled(SHA);
    const failed = store.poll(ref());
    assert.equal(failed.state, "failed");
    assert.ok(failed.state === "failed" && failed.reason === "download-stalled" && !failed.terminal);
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), [], "no partial file is left");
    await clock.advance(59_999);
    assert.equal(store.poll(ref()).state, "failed", "reported for a minute");
    stall.on = false;
    sent = new Promise<void>((r) => onSent = r);
    await clock.advance(1);
    assert.equal(store.poll(ref()).state, "downloading", "tried again after a minute");
    await sent;
    await store.settled(SHA);
    assert.equal(store.poll(ref()).state, "ready");
    assert.deepEqual(await Deno.readFile(store.path(SHA)), BYTES);
    assert.equal(clock.pending, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("SnapshotStore: a digest mismatch and a redirect to plain http are terminal and keep nothing", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-snapstore-" });
  try {
    await t.step("digest mismatch", async () => {
      const store = new SnapshotStore({ dir, fetch: () => Promise.resolve(new Response(BYTES.slice())) });
      const other = "e".repeat(64);
      store.poll(ref(other));
      await store.settled(other);
      const s = store.poll(ref(other));
      assert.ok(s.state === "failed" && s.reason === "digest-mismatch" && s.terminal, JSON.stringify(s));
    });
    await t.step("a redirect to http", async () => {
      const store = new SnapshotStore({
        dir,
        fetch: () =>
          Promise.resolve(new Response(null, { status: 302, headers: { location: "http://snap.example/s" } })),
      });
      store.poll(ref());
      await store.settled(SHA);
      const s = store.poll(ref());
      assert.ok(s.state === "failed" && s.reason === "not-https" && s.terminal, JSON.stringify(s));
    });
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
