import assert from "node:assert/strict";
import { checkTransportUrl, isLoopbackHost, UrlRefused } from "./url_policy.ts";
import { join } from "./identity.ts";
import { connectWebSocket } from "./ws_client.ts";

Deno.test("session and join URLs: TLS anywhere, plain only to a loopback address, and the refusal says so", async (t) => {
  const rows: { url: string; use: "session" | "join"; ok: boolean }[] = [
    { url: "wss://gw.example/v1/session", use: "session", ok: true },
    { url: "https://gw.example/v1/join", use: "join", ok: true },
    { url: "ws://127.0.0.1:8080/v1/session", use: "session", ok: true },
    { url: "ws://127.8.9.10/v1/session", use: "session", ok: true },
    { url: "ws://[::1]:9/v1/session", use: "session", ok: true },
    { url: "ws://localhost:9/v1/session", use: "session", ok: true },
    { url: "http://127.0.0.1:8080/v1/join", use: "join", ok: true },
    { url: "ws://gw.example/v1/session", use: "session", ok: false },
    { url: "ws://10.0.0.1/v1/session", use: "session", ok: false },
    { url: "ws://128.0.0.1/v1/session", use: "session", ok: false },
    { url: "ws://127.0.0.1.evil.example/v1/session", use: "session", ok: false },
    { url: "http://gw.example/v1/join", use: "join", ok: false },
    { url: "https://gw.example/v1/session", use: "session", ok: false },
    { url: "wss://gw.example/v1/join", use: "join", ok: false },
    { url: "not a url", use: "session", ok: false },
  ];
  for (const r of rows) {
    await t.step(`${r.use} ${r.url}`, () => {
      if (r.ok) assert.ok(checkTransportUrl(r.url, r.use));
      else {assert.throws(() =>
          checkTransportUrl(r.url, r.use), (e) =>
          e instanceof UrlRefused && e.reason === "insecure-url");}
    });
  }
  assert.throws(
    () => checkTransportUrl("ws://gw.example/v1/session", "session"),
    /only to a loopback address \(127\.0\.0\.0\/8, ::1, localhost\); use wss:/,
  );
});

Deno.test("isLoopbackHost: localhost, ::1 and 127.0.0.0/8 in dotted decimal, nothing else", async (t) => {
  const rows: [string, boolean][] = [
    ["127.0.0.1", true],
    ["127.255.255.254", true],
    ["127.000.0.01", true],
    ["localhost", true],
    ["LocalHost", true],
    ["::1", true],
    ["[::1]", true],
    ["127.0.0.256", false],
    ["127.0.0", false],
    ["127.0.0.1.5", false],
    ["127.0.0.", false],
    ["127..0.1", false],
    ["127.0.0.1234", false],
    ["127.0.0.+1", false],
    ["127.0.0.1 ", false],
    ["127.0.0.x", false],
    ["128.0.0.1", false],
    ["10.0.0.1", false],
    ["0127.0.0.1", false],
    ["::2", false],
    ["gw.example", false],
    ["", false],
  ];
  for (const [host, loopback] of rows) {
    await t.step(JSON.stringify(host), () => assert.equal(isLoopbackHost(host), loopback));
  }
});

Deno.test("join() and connectWebSocket() refuse a plain URL beyond loopback before any request", async () => {
  let fetched = false;
  await assert.rejects(
    () =>
      join({
        dataDir: "/nonexistent/never-written",
        joinUrl: "http://gw.example/v1/join",
        token: "t",
        role: "node",
        hostname: "h",
        agentVersion: "v",
        fetch: () => {
          fetched = true;
          return Promise.reject(new Error("no request expected"));
        },
      }),
    UrlRefused,
  );
  assert.equal(fetched, false);
  await assert.rejects(() => connectWebSocket("ws://gw.example/v1/session"), UrlRefused);
});
