import assert from "node:assert/strict";
import { UploadError } from "../../core/commands/kind_handlers/mod.ts";
import { HttpsUploader } from "./https_put.ts";
import { lazyHttpsUploader } from "./lazy_uploader.ts";
import { makeCerts } from "./certs_testing.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";
import { waitFor } from "../../fixtures/poll.ts";

const certs = await makeCerts();
if (certs === null) console.warn("skipping the HTTPS upload tests: openssl is not installed");

interface Seen {
  method: string;
  path: string;
  length: string | null;
  type: string | null;
  body: Uint8Array;
}

/** A local HTTPS server: `/redirect-*` answers 307, `/forbidden` 403, anything else stores the body. */
function serve(c: NonNullable<typeof certs>, seen: Seen[]) {
  return Deno.serve({ port: 0, hostname: "127.0.0.1", cert: c.cert, key: c.key, onListen() {} }, async (req) => {
    const u = new URL(req.url);
    const body = new Uint8Array(await req.arrayBuffer());
    seen.push({
      method: req.method,
      path: u.pathname + u.search,
      length: req.headers.get("content-length"),
      type: req.headers.get("content-type"),
      body,
    });
    if (u.pathname === "/redirect-https") {
      return new Response(null, { status: 307, headers: { location: "/final?x=1" } });
    }
    if (u.pathname === "/redirect-http") {
      return new Response(null, { status: 307, headers: { location: `http://127.0.0.1:${u.port}/final` } });
    }
    if (u.pathname === "/redirect-loop") {
      return new Response(null, { status: 308, headers: { location: "/redirect-loop" } });
    }
    if (u.pathname === "/forbidden") return new Response("no", { status: 403 });
    return new Response(null, { status: 200 });
  });
}

const T = { ignore: certs === null, sanitizeResources: true, sanitizeOps: true };

function code(e: unknown): string {
  return e instanceof UploadError ? e.code : `not an UploadError: ${e}`;
}

Deno.test({
  ...T,
  name: "HttpsUploader PUTs the exact bytes with a Content-Length to a server it trusts through the injected CA",
  fn: async () => {
    const seen: Seen[] = [];
    const srv = serve(certs!, seen);
    try {
      const body = new Uint8Array(300_000).map((_, i) => i & 0xff);
      await new HttpsUploader({ caCerts: [certs!.ca] }).put(
        `https://127.0.0.1:${srv.addr.port}/bucket/o?sig=abc`,
        body,
        {
          contentType: "application/gzip",
        },
      );
      assert.equal(seen.length, 1);
      assert.deepEqual([seen[0]!.method, seen[0]!.path, seen[0]!.length, seen[0]!.type], [
        "PUT",
        "/bucket/o?sig=abc",
        "300000",
        "application/gzip",
      ]);
      assert.deepEqual(seen[0]!.body, body);
    } finally {
      await srv.shutdown();
    }
  },
});

Deno.test({
  ...T,
  name: "HttpsUploader refuses: a server it does not trust, an http URL, a redirect to http, a redirect loop, HTTP 403",
  fn: async () => {
    const seen: Seen[] = [];
    const srv = serve(certs!, seen);
    const base = `https://127.0.0.1:${srv.addr.port}`;
    const body = new Uint8Array([1, 2, 3]);
    const up = new HttpsUploader({ caCerts: [certs!.ca] });
    try {
      const rows: [string, () => Promise<void>, string][] = [
        [
          "untrusted certificate",
          () => new HttpsUploader().put(`${base}/o`, body, { contentType: "x" }),
          "upload-failed",
        ],
        ["http URL", () => up.put(`http://127.0.0.1:${srv.addr.port}/o`, body, { contentType: "x" }), "upload-refused"],
        ["redirect to http", () => up.put(`${base}/redirect-http`, body, { contentType: "x" }), "upload-refused"],
        ["redirect loop", () => up.put(`${base}/redirect-loop`, body, { contentType: "x" }), "upload-failed"],
        ["HTTP 403", () => up.put(`${base}/forbidden`, body, { contentType: "x" }), "upload-failed"],
      ];
      for (const [name, f, want] of rows) {
        let got = "resolved";
        try {
          await f();
        } catch (e) {
          got = code(e);
        }
        assert.equal(got, want, name);
      }
      assert.ok(!seen.some((s) => s.path === "/final"), "nothing followed the http redirect");
    } finally {
      await srv.shutdown();
    }
  },
});

Deno.test({
  ...T,
  name: "HttpsUploader follows a redirect to https and re-sends the body",
  fn: async () => {
    const seen: Seen[] = [];
    const srv = serve(certs!, seen);
    try {
      await new HttpsUploader({ caCerts: [certs!.ca] }).put(
        `https://127.0.0.1:${srv.addr.port}/redirect-https`,
        new Uint8Array([9, 9]),
        { contentType: "x" },
      );
      assert.deepEqual(seen.map((s) => [s.path, s.body.length]), [["/redirect-https", 2], ["/final?x=1", 2]]);
    } finally {
      await srv.shutdown();
    }
  },
});

/** A TLS peer that completes the handshake and then never reads nor answers: the kernel's buffers fill and stay full. */
function mute(c: NonNullable<typeof certs>) {
  const listener = Deno.listenTls({ hostname: "127.0.0.1", port: 0, cert: c.cert, key: c.key });
  const conns: Deno.TlsConn[] = [];
  const handshakes: Promise<void>[] = [];
  const done = (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      // Each handshake on its own: a client that gives up mid-handshake (the cancel below) ends only its own, and
      // close() cancelling one still pending ("Interrupted: operation canceled") is the peer's own doing.
      handshakes.push(
        conn.handshake().then(() => {}, (e) => {
          if (!_peerEnded(e)) throw e;
        }),
      );
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    async close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch (e) {
          if (!(e instanceof Deno.errors.BadResource)) throw e;
        }
      }
      await done.catch((e) => {
        if (!(e instanceof Deno.errors.BadResource || e instanceof Deno.errors.ConnectionReset)) throw e;
      });
      await Promise.all(handshakes);
    },
  };
}

/** The ways a TLS handshake ends when one side closes: expected of this silent peer, nothing else is. */
function _peerEnded(e: unknown): boolean {
  return e instanceof Deno.errors.Interrupted || e instanceof Deno.errors.BadResource ||
    e instanceof Deno.errors.ConnectionReset || e instanceof Deno.errors.UnexpectedEof ||
    e instanceof Deno.errors.BrokenPipe;
}

/** Settles to "resolved" or the upload error's code. */
function outcomeOf(p: Promise<void>): { readonly got: string | undefined; readonly settled: Promise<string> } {
  let got: string | undefined;
  const settled = p.then(() => "resolved", (e) => code(e)).then((g) => (got = g));
  return {
    get got() {
      return got;
    },
    settled,
  };
}

Deno.test({
  ...T,
  name:
    "HttpsUploader: a real TLS peer that stops taking bytes is upload-stalled once a 2-minute window moved less than 1 MiB",
  fn: async () => {
    const peer = mute(certs!);
    try {
      const clock = new FakeClock();
      const up = new HttpsUploader({ caCerts: [certs!.ca], clock });
      const o = outcomeOf(
        up.put(`https://127.0.0.1:${peer.port}/o`, new Uint8Array(32 * 1024 * 1024), { contentType: "x" }),
      );
      // Each fake window lets real I/O run between its ticks; once the kernel's buffers are full a window moves
      // nothing. The limit is a hang guard (32 MiB of windows of at least 1 MiB), not the thing asserted.
      await clock.advanceUntil(() => o.got !== undefined, { stepMs: 120_000, limitMs: 40 * 120_000 });
      assert.equal(await o.settled, "upload-stalled");
      assert.equal(clock.pending, 0, "the window and the cap were cancelled");
    } finally {
      await peer.close();
    }
  },
});

Deno.test({
  ...T,
  name: "HttpsUploader: a real TLS transfer past its cap is upload-timeout, and a cancel ends one at once",
  fn: async () => {
    const peer = mute(certs!);
    try {
      const clock = new FakeClock();
      // A stall window longer than the cap isolates the cap.
      const capped = new HttpsUploader({ caCerts: [certs!.ca], clock, limits: { stallWindowMs: 7 * 3_600_000 } });
      const o = outcomeOf(
        capped.put(`https://127.0.0.1:${peer.port}/o`, new Uint8Array(64 * 1024 * 1024), { contentType: "x" }),
      );
      await waitFor(() => clock.pending === 2 || o.got !== undefined, "the transfer set its window and its cap");
      await clock.advance(6 * 3_600_000 - 1);
      assert.equal(o.got, undefined, "nothing ended before the cap");
      await clock.advance(1);
      assert.equal(await o.settled, "upload-timeout");

      const ac = new AbortController();
      const open = new HttpsUploader({ caCerts: [certs!.ca], clock, limits: { stallWindowMs: 7 * 3_600_000 } });
      const cancelled = open.put(`https://127.0.0.1:${peer.port}/o`, new Uint8Array(64 * 1024 * 1024), {
        contentType: "x",
        signal: ac.signal,
      });
      await waitFor(() => clock.pending === 2, "the second transfer set its window and its cap");
      ac.abort();
      await assert.rejects(cancelled, (e) => e instanceof UploadError && /cancelled/.test(e.message));
      assert.equal(clock.pending, 0);
    } finally {
      await peer.close();
    }
  },
});

Deno.test({
  ...T,
  name: "lazyHttpsUploader: put and putFile go through an HttpsUploader made with its options on first use",
  fn: async () => {
    const seen: Seen[] = [];
    const srv = serve(certs!, seen);
    const dir = await Deno.makeTempDir();
    try {
      const up = lazyHttpsUploader({ caCerts: [certs!.ca] });
      const body = new Uint8Array(1000).map((_, i) => i & 0xff);
      await up.put(`https://127.0.0.1:${srv.addr.port}/a`, body, { contentType: "application/gzip" });
      await Deno.writeFile(`${dir}/f`, body.subarray(0, 10));
      await up.putFile(`https://127.0.0.1:${srv.addr.port}/b`, `${dir}/f`, { contentType: "application/x-raw" });
      assert.deepEqual(seen.map((s) => [s.method, s.path, s.length, s.type]), [
        ["PUT", "/a", "1000", "application/gzip"],
        ["PUT", "/b", "10", "application/x-raw"],
      ]);
      assert.deepEqual(seen[1]!.body, body.subarray(0, 10));
      // Its options are the uploader's: without the CA, the server is not trusted.
      await assert.rejects(
        lazyHttpsUploader().put(`https://127.0.0.1:${srv.addr.port}/c`, body, { contentType: "x/y" }),
        (e) => code(e) === "upload-failed",
      );
    } finally {
      await srv.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
