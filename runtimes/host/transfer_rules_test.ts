/**
 * The transfer rules of `instance.snapshot` uploads on an injected clock: a peer that stops taking bytes is
 * `upload-stalled` once a 2-minute window moved less than 1 MiB, and a transfer is `upload-timeout` after 6 hours,
 * whatever its pace. The connection is a test double whose writes block on demand, so nothing waits for real time.
 */
import assert from "node:assert/strict";
import { UploadError } from "../../core/commands/kind_handlers/mod.ts";
import { type Conn, HttpsUploader } from "./https_put.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";

/** A connection that takes `takeBytes` and then blocks every write until it is closed. */
function blockingConn(takeBytes: number): { conn: Conn; blocked: Promise<void> } {
  let took = 0;
  let onBlocked!: () => void;
  const blocked = new Promise<void>((r) => onBlocked = r);
  let release: ((e: Error) => void) | undefined;
  const conn: Conn = {
    read: () => new Promise(() => {}),
    write(p) {
      if (took < takeBytes) {
        const n = Math.min(p.length, takeBytes - took);
        took += n;
        return Promise.resolve(n);
      }
      onBlocked();
      return new Promise((_, reject) => release = reject);
    },
    close() {
      release?.(new Deno.errors.BadResource("closed"));
    },
  };
  return { conn, blocked };
}

async function withFile<T>(bytes: number, f: (path: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-transfer-" });
  try {
    await Deno.writeFile(`${dir}/snapshot.tar`, new Uint8Array(bytes));
    return await f(`${dir}/snapshot.tar`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("putFile: a peer that stops taking bytes is upload-stalled when a 2-minute window moved less than 1 MiB", async () => {
  await withFile(4 * 1024 * 1024, async (path) => {
    const clock = new FakeClock();
    const { conn, blocked } = blockingConn(512 * 1024);
    const up = new HttpsUploader({ clock, connect: () => Promise.resolve(conn) });
    const put = up.putFile("https://store.example/s.tar", path, { contentType: "application/x-tar" });
    const outcome = put.then(() => "done", (e) => e);
    await blocked;
    await clock.advance(119_999);
    assert.equal(clock.pending, 2, "nothing ended before the window closed");
    await clock.advance(1);
    const e = await outcome;
    assert.ok(e instanceof UploadError, String(e));
    assert.equal(e.code, "upload-stalled");
    assert.match(e.message, /moved in 120000 ms \(at least 1048576 required\)/);
    assert.equal(clock.pending, 0, "the window and the cap were cancelled");
  });
});

Deno.test("putFile: a transfer that keeps moving is still upload-timeout after 6 hours in all", async () => {
  await withFile(64 * 1024, async (path) => {
    const clock = new FakeClock();
    const { conn, blocked } = blockingConn(0);
    // A stall window longer than the cap isolates the cap (the window's own test is above).
    const up = new HttpsUploader({
      clock,
      connect: () => Promise.resolve(conn),
      limits: { stallWindowMs: 7 * 3_600_000 },
    });
    const outcome = up.putFile("https://store.example/s.tar", path, { contentType: "application/x-tar" }).then(
      () => "done",
      (e) => e,
    );
    await blocked;
    await clock.advance(6 * 3_600_000);
    const e = await outcome;
    assert.ok(e instanceof UploadError && e.code === "upload-timeout", String(e));
  });
});

Deno.test("putFile: a plain http URL is refused before any connection", async () => {
  await withFile(10, async (path) => {
    let dialed = 0;
    const up = new HttpsUploader({
      connect: () => {
        dialed++;
        return Promise.reject(new Error("never"));
      },
    });
    await assert.rejects(
      up.putFile("http://store.example/s.tar", path, { contentType: "application/x-tar" }),
      (e) => e instanceof UploadError && e.code === "upload-refused",
    );
    assert.equal(dialed, 0);
  });
});
