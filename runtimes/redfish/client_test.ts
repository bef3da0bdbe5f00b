import assert from "node:assert/strict";
import { FakeBmc } from "../../fixtures/redfish/fake_bmc.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";
import { makeCerts } from "../host/certs_testing.ts";
import { checkPushPath, RedfishClient, type RedfishClientOptions } from "./client.ts";
import { RedfishError } from "./errors.ts";
import { certSha256 } from "./socket_transport.ts";
import { steppingClock } from "./redfish_testing.ts";

const certs = await makeCerts();
const noOpenssl = certs === null ? "openssl is absent: no certificates for the TLS cases" : undefined;
if (noOpenssl) console.warn(`skipping TLS cases: ${noOpenssl}`);
const leafSha = certs ? certSha256(_der(certs.cert)) : "";
const SYSTEM = "/redfish/v1/Systems/437XR1138R2";

function _der(pem: string): Uint8Array {
  const b64 = pem.replace(/-----[^-]+-----/g, "").replace(/\s+/g, "");
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

async function _err(p: Promise<unknown>): Promise<RedfishError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof RedfishError) return e;
    throw e;
  }
  throw new Error("no RedfishError");
}

async function _code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    if (e instanceof RedfishError) return e.code;
    throw e;
  }
  return "none";
}

function _client(bmc: FakeBmc, o: Partial<RedfishClientOptions> = {}): RedfishClient {
  return new RedfishClient({
    host: "127.0.0.1",
    port: bmc.port,
    credentials: { username: "Administrator", password: "secret" },
    certSha256: leafSha,
    clock: steppingClock(),
    ...o,
  });
}

Deno.test({
  name: "RedfishClient over a leaf-pinned TLS BMC: a session, the only system by @odata.id, its recorded fields",
  ignore: noOpenssl !== undefined,
  async fn() {
    const bmc = await FakeBmc.start({ tls: { cert: certs!.cert, key: certs!.key } });
    const c = _client(bmc);
    try {
      const path = await c.systemPath("");
      assert.deepEqual(path, SYSTEM);
      const sys = await c.get(path);
      assert.deepEqual([sys.body.Manufacturer, sys.body.Model, sys.body.PowerState], ["Contoso", "3500", "On"]);
      assert.deepEqual(sys.etag, 'W/"1"');
      assert.deepEqual(c.authMode, "session");
      assert.deepEqual(await c.systemPath("437XR1138R2"), SYSTEM);
      assert.deepEqual(await _code(c.systemPath("nope")), "bmc-refused");
    } finally {
      await c.close();
      await bmc.stop();
    }
    // The session was logged out, and no request carried a password anywhere but the login.
    assert(
      bmc.requests.some((r) => r.method === "DELETE" && r.path.startsWith("/redfish/v1/SessionService/Sessions/")),
    );
  },
});

Deno.test({
  name: "RedfishClient refuses a BMC whose leaf certificate is not the pinned one before it sends a byte",
  ignore: noOpenssl !== undefined,
  async fn() {
    const bmc = await FakeBmc.start({ tls: { cert: certs!.cert, key: certs!.key } });
    const c = _client(bmc, { certSha256: "0".repeat(64) });
    try {
      const e = await _err(c.get("/redfish/v1/Systems"));
      assert.deepEqual(e.code, "bmc-tls");
      assert(e.message.includes(leafSha), e.message);
      assert.deepEqual(bmc.requests.length, 0);
    } finally {
      await c.close();
      await bmc.stop();
    }
  },
});

Deno.test({
  name: "RedfishClient pinned by CA: the chain to the pinned CA is accepted, a BMC without a trusted chain is not",
  ignore: noOpenssl !== undefined,
  async fn() {
    const bmc = await FakeBmc.start({ tls: { cert: certs!.cert, key: certs!.key } });
    try {
      const ok = _client(bmc, { certSha256: undefined, caPem: certs!.ca });
      assert.deepEqual((await ok.get("/redfish/v1/Systems")).body["Members@odata.count"], 1);
      await ok.close();
      const other = await makeCerts();
      const bad = _client(bmc, { certSha256: undefined, caPem: other!.ca });
      assert.deepEqual(await _code(bad.get("/redfish/v1/Systems")), "bmc-tls");
      await bad.close();
    } finally {
      await bmc.stop();
    }
  },
});

Deno.test("RedfishClient maps answers to codes with the BMC's @Message.ExtendedInfo", async (t) => {
  const bmc = await FakeBmc.start();
  try {
    await t.step("401: wrong credentials are bmc-auth", async () => {
      const c = _client(bmc, { scheme: "http", certSha256: undefined, credentials: { username: "x", password: "y" } });
      const e = await _err(c.get("/redfish/v1/Systems"));
      assert.deepEqual([e.code, e.details.status], ["bmc-auth", 401]);
      assert(e.message.includes("The credentials are not valid."), e.message);
      await c.close();
    });
    await t.step("404 carries the MessageId and the message", async () => {
      const c = _client(bmc, { scheme: "http", certSha256: undefined });
      const e = await _err(c.get("/redfish/v1/Systems/none"));
      assert.deepEqual(e.code, "bmc-refused");
      assert.deepEqual(e.details.messages?.[0]?.messageId, "Base.1.8.ResourceMissingAtURI");
      assert(e.message.includes("Base.1.8.ResourceMissingAtURI"), e.message);
      await c.close();
    });
    await t.step("a PATCH sends the ETag it read; a changed resource answers 412 = bmc-etag-mismatch", async () => {
      const c = _client(bmc, { scheme: "http", certSha256: undefined });
      const a = await c.get(SYSTEM);
      await c.patch(SYSTEM, { AssetTag: "rack-7" }, a.etag);
      assert.deepEqual(bmc.requests.at(-1)?.ifMatch, a.etag);
      assert.deepEqual(bmc.resource(SYSTEM)?.AssetTag, "rack-7");
      assert.deepEqual(await _code(c.patch(SYSTEM, { AssetTag: "rack-8" }, a.etag)), "bmc-etag-mismatch");
      assert.deepEqual(bmc.resource(SYSTEM)?.AssetTag, "rack-7");
      await c.close();
    });
  } finally {
    await bmc.stop();
  }
});

Deno.test("RedfishClient falls back to basic auth on a BMC without sessions, and proves the credentials", async () => {
  const bmc = await FakeBmc.start({ noSessions: true });
  const c = _client(bmc, { scheme: "http", certSha256: undefined });
  try {
    await c.login();
    assert.deepEqual(c.authMode, "basic");
    assert.deepEqual(bmc.requests.at(-1)?.user, "Administrator");
    const wrong = _client(bmc, {
      scheme: "http",
      certSha256: undefined,
      credentials: { username: "Administrator", password: "old" },
    });
    assert.deepEqual(await _code(wrong.login()), "bmc-auth");
    await wrong.close();
  } finally {
    await c.close();
    await bmc.stop();
  }
});

Deno.test("RedfishClient.waitTask polls a 202 task monitor at Retry-After until the task ends", async () => {
  const bmc = await FakeBmc.start({ taskPolls: 3 });
  const clock = steppingClock();
  const c = _client(bmc, { scheme: "http", certSha256: undefined, clock });
  try {
    const a = await c.post("/redfish/v1/UpdateService/Actions/SimpleUpdate", { ImageURI: "https://x/fw.bin" });
    assert.deepEqual(a.status, 202);
    const done = await c.waitTask(a.location!, { timeoutMs: 60_000 });
    assert.deepEqual(done.body.TaskState, "Completed");
    assert.deepEqual(clock.slept, [1000, 1000, 1000]);
    const b = await c.post("/redfish/v1/UpdateService/Actions/SimpleUpdate", { ImageURI: "https://x/fw.bin" });
    assert.deepEqual(await _code(c.waitTask(b.location!, { timeoutMs: 1500 })), "bmc-timeout");
  } finally {
    await c.close();
    await bmc.stop();
  }
});

Deno.test("RedfishClient follows only paths on the same BMC", async (t) => {
  const bmc = await FakeBmc.start();
  const c = _client(bmc, { scheme: "http", certSha256: undefined });
  try {
    for (const p of ["https://evil.example/redfish/v1/", "/redfish/v1/../../etc/passwd", "/other", "//evil/x"]) {
      await t.step(p, async () => assert.deepEqual(await _code(c.get(p)), "bmc-bad-response"));
    }
    await t.step("a task monitor elsewhere", async () => {
      assert.deepEqual(
        await _code(c.waitTask("http://10.0.0.9/redfish/v1/TaskService/Tasks/1", { timeoutMs: 1 })),
        "bmc-bad-response",
      );
    });
  } finally {
    await c.close();
    await bmc.stop();
  }
});

Deno.test("RedfishClient refuses plain http beyond loopback", () => {
  let threw = false;
  try {
    new RedfishClient({ host: "10.1.2.3", scheme: "http", credentials: { username: "a", password: "b" } });
  } catch (e) {
    threw = e instanceof RangeError;
  }
  assert(threw);
});

Deno.test("RedfishClient bounds an answer and times a request on the injected clock", async (t) => {
  const big = "x".repeat(70_000);
  let hang: (() => void) | undefined;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    if (new URL(req.url).pathname === "/redfish/v1/big") return new Response(`{"a":"${big}"}`);
    await new Promise<void>((r) => hang = r);
    return new Response("{}");
  });
  const clock = new FakeClock();
  const c = new RedfishClient({
    host: "127.0.0.1",
    port: server.addr.port,
    scheme: "http",
    auth: "basic",
    credentials: { username: "a", password: "b" },
    maxResponseBytes: 64 * 1024,
    timeoutMs: 5000,
    clock,
  });
  try {
    await t.step("a body past the bound is bmc-bad-response", async () => {
      assert.deepEqual(await _code(c.get("/redfish/v1/big")), "bmc-bad-response");
    });
    await t.step("no answer by the request's time is bmc-timeout", async () => {
      const p = _code(c.get("/redfish/v1/slow"));
      while (hang === undefined) await new Promise((r) => setTimeout(r, 5));
      await clock.advance(5000);
      assert.deepEqual(await p, "bmc-timeout");
      hang();
    });
  } finally {
    await c.close();
    await server.shutdown();
  }
});

Deno.test({
  name:
    "RedfishClient.upload streams a body with its Content-Length (never chunked) over the pinned TLS, to a push URI on the BMC only",
  ignore: noOpenssl !== undefined,
  async fn(t) {
    const seen: { path: string; length: string | null; chunked: string | null; size: number; broken?: string }[] = [];
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, cert: certs!.cert, key: certs!.key, onListen() {} },
      async (req) => {
        const path = new URL(req.url).pathname;
        const entry = {
          path,
          length: req.headers.get("content-length"),
          chunked: req.headers.get("transfer-encoding"),
          size: 0,
        };
        if (path === "/redfish/v1/SessionService/Sessions") {
          await req.body?.cancel();
          return Response.json({}, { status: 201, headers: { "X-Auth-Token": "t", Location: `${path}/1` } });
        }
        try {
          entry.size = (await req.arrayBuffer()).byteLength;
        } catch (e) {
          if (!(e instanceof TypeError || e instanceof Deno.errors.Http)) throw e;
          seen.push({ ...entry, broken: String(e) });
          return new Response(null, { status: 400 });
        }
        seen.push(entry);
        return new Response(null, { status: 204 });
      },
    );
    const c = new RedfishClient({
      host: "127.0.0.1",
      port: server.addr.port,
      credentials: { username: "Administrator", password: "secret" },
      certSha256: leafSha,
      clock: steppingClock(),
    });
    const chunks = (n: number) => ReadableStream.from([new Uint8Array(n), new Uint8Array(n), new Uint8Array(n)]);
    const o = { contentType: "application/octet-stream", timeoutMs: 30_000 };
    try {
      await t.step("three chunks arrive as one body of the declared length, outside /redfish too", async () => {
        const a = await c.upload("/FWUpdate", { size: 3 * 70_000, stream: chunks(70_000) }, o);
        assert.equal(a.status, 204);
        assert.deepEqual(seen.at(-1), { path: "/FWUpdate", length: "210000", chunked: null, size: 210_000 });
      });
      await t.step("a stream shorter than declared is refused and the BMC never gets the whole body", async () => {
        const before = seen.filter((s) => s.broken === undefined).length;
        const err = await c.upload("/FWUpdate", { size: 300_000, stream: chunks(70_000) }, o).then(
          () => undefined,
          (e) => e,
        );
        assert(err instanceof RangeError && /ended at 210000 of its declared 300000/.test(err.message), String(err));
        assert.equal(seen.filter((s) => s.broken === undefined).length, before);
      });
      await t.step("a stream longer than declared is refused before the excess is written", async () => {
        const err = await c.upload("/FWUpdate", { size: 100_000, stream: chunks(70_000) }, o).then(
          () => undefined,
          (e) => e,
        );
        assert(err instanceof RangeError && /ran past its declared 100000/.test(err.message), String(err));
      });
      for (const p of ["https://evil.example/FWUpdate", "//evil/x", "/a/../etc/passwd", "FWUpdate", "/x#y"]) {
        await t.step(`push URI ${p}: bmc-bad-response, nothing sent`, async () => {
          const n = seen.length;
          assert.equal(await _code(c.upload(p, { size: 1, stream: chunks(1) }, o)), "bmc-bad-response");
          assert.equal(seen.length, n);
        });
      }
      await t.step("pinned by CA: the upload verifies the chain to that CA alone (another CA is bmc-tls)", async () => {
        const other = (await makeCerts())!;
        for (const [ca, want] of [[certs!.ca, "none"], [other.ca, "bmc-tls"]] as const) {
          const byCa = new RedfishClient({
            host: "127.0.0.1",
            port: server.addr.port,
            credentials: { username: "Administrator", password: "secret" },
            auth: "basic",
            caPem: ca,
            clock: steppingClock(),
          });
          try {
            assert.equal(
              await _code(byCa.upload("/FWUpdate", { size: 5, stream: ReadableStream.from([new Uint8Array(5)]) }, o)),
              want,
            );
          } finally {
            await byCa.close();
          }
        }
      });
      await t.step("checkPushPath keeps a same-origin absolute URL's path", () => {
        const base = new URL(`https://127.0.0.1:${server.addr.port}`);
        assert.equal(checkPushPath(`${base.origin}/cgi-bin/upload?x=1`, base), "/cgi-bin/upload?x=1");
      });
    } finally {
      await c.close();
      await server.shutdown();
    }
  },
});
