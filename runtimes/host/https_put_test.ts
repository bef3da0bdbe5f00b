import assert from "node:assert/strict";
import { UploadError } from "../../core/commands/kind_handlers/mod.ts";
import { HttpsUploader } from "./https_put.ts";
import { makeCerts } from "./certs_testing.ts";

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

/** A TLS peer that reads `bytesPerTick` every 50 ms and never answers: a trickle. */
function trickle(c: NonNullable<typeof certs>, bytesPerTick: number) {
  const listener = Deno.listenTls({ hostname: "127.0.0.1", port: 0, cert: c.cert, key: c.key });
  const conns: Deno.Conn[] = [];
  const loops: Promise<void>[] = [];
  const done = (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      loops.push((async () => {
        const buf = new Uint8Array(bytesPerTick);
        try {
          while (true) {
            if ((await conn.read(buf)) === null) return;
            await new Promise((r) => setTimeout(r, 50));
          }
        } catch (e) {
          if (!(e instanceof Deno.errors.BadResource || e instanceof Deno.errors.ConnectionReset)) throw e;
        }
      })());
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
      await done.catch(() => {});
      await Promise.allSettled(loops);
    },
  };
}

Deno.test({
  ...T,
  name: "HttpsUploader: a trickling peer that moves less than the window's minimum is upload-stalled",
  fn: async () => {
    const peer = trickle(certs!, 4096); // ~80 KiB/s
    try {
      const up = new HttpsUploader({
        caCerts: [certs!.ca],
        limits: { stallWindowMs: 400, stallMinBytes: 1024 * 1024 },
      });
      const t0 = Date.now();
      let got = "resolved";
      try {
        await up.put(`https://127.0.0.1:${peer.port}/o`, new Uint8Array(32 * 1024 * 1024), { contentType: "x" });
      } catch (e) {
        got = code(e);
      }
      assert.equal(got, "upload-stalled");
      assert.ok(Date.now() - t0 < 10_000);
    } finally {
      await peer.close();
    }
  },
});

Deno.test({
  ...T,
  name: "HttpsUploader: a transfer past its cap is upload-timeout, and a cancel ends it at once",
  fn: async () => {
    const peer = trickle(certs!, 64 * 1024);
    try {
      const capped = new HttpsUploader({ caCerts: [certs!.ca], limits: { stallWindowMs: 60_000, capMs: 300 } });
      let got = "resolved";
      try {
        await capped.put(`https://127.0.0.1:${peer.port}/o`, new Uint8Array(64 * 1024 * 1024), { contentType: "x" });
      } catch (e) {
        got = code(e);
      }
      assert.equal(got, "upload-timeout");
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 200);
      const open = new HttpsUploader({ caCerts: [certs!.ca], limits: { stallWindowMs: 60_000 } });
      await assert.rejects(
        open.put(`https://127.0.0.1:${peer.port}/o`, new Uint8Array(64 * 1024 * 1024), {
          contentType: "x",
          signal: ac.signal,
        }),
        (e) => e instanceof UploadError && /cancelled/.test(e.message),
      );
    } finally {
      await peer.close();
    }
  },
});
