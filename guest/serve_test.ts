import assert from "node:assert/strict";
import { defaultRootConfig, encodeFrame, encodeHostMessage, encodeRootConfig, Kind } from "../core/framing/mod.ts";
import { silentLogger } from "../core/log/mod.ts";
import { FramingClient } from "../runtimes/guest/framing_client.ts";
import { MemoryStream } from "./memory_transport.ts";
import { NO_LAYERED_ROOT, serve } from "./serve.ts";

const log = silentLogger();

Deno.test("serve answers Ping, Echo, Probe and Stop, then returns", async () => {
  const s = new MemoryStream();
  const served = serve(s.guest, { log });
  const c = await FramingClient.attach(s.host);
  await c.ping();
  await c.echo(new Uint8Array(256 * 1024).map((_, i) => i & 0xff));
  await c.echo(new Uint8Array(0));
  assert.deepEqual(await c.probe({ name: "mounts", args: [] }), { problem: NO_LAYERED_ROOT });
  assert.equal(await c.stop(), null);
  assert.deepEqual(await served, { ok: true, reason: "stopped" });
});

Deno.test("serve takes messages whose bytes arrive one at a time", async () => {
  const s = new MemoryStream();
  s.hostChunk = 1;
  const served = serve(s.guest, { log });
  const c = await FramingClient.attach(s.host);
  await c.echo(Uint8Array.of(1, 2, 3, 4, 5, 6, 7));
  await c.ping();
  await c.stop();
  assert.equal((await served).ok, true);
});

Deno.test("a reset in the middle of a message drops it; the next epoch starts clean", async () => {
  const s = new MemoryStream();
  const served = serve(s.guest, { log });
  const partial = encodeFrame(Kind.Echo, new Uint8Array(100));
  s.sendRaw(partial.subarray(0, 40));
  s.reset();
  const c = await FramingClient.attach(s.host, { sync: true });
  await c.ping();
  await c.stop();
  assert.deepEqual(await served, { ok: true, reason: "stopped" });
});

Deno.test("a stream that ends at a message boundary ends serving with 0, inside a message with a failure", async () => {
  const s = new MemoryStream();
  const served = serve(s.guest, { log });
  s.sendRaw(encodeFrame(Kind.Ping));
  s.endHost();
  assert.deepEqual(await served, { ok: true, reason: "closed" });
  const s2 = new MemoryStream();
  const served2 = serve(s2.guest, { log });
  s2.sendRaw(encodeFrame(Kind.Echo, new Uint8Array(9)).subarray(0, 7));
  s2.endHost();
  const end = await served2;
  assert.equal(end.ok, false);
});

const key = { id: 1n, generation: 1n };
const REFUSED: [string, Uint8Array][] = [
  ["a root configuration", encodeFrame(Kind.RootConfig, encodeRootConfig(defaultRootConfig()))],
  ["a part of a mapping table", encodeFrame(Kind.Maps, new Uint8Array(20))],
  ["Start", encodeFrame(Kind.Start)],
  [
    "an execution's start",
    (() => {
      const m = encodeHostMessage({
        type: "start",
        key,
        start: {
          chunk: 1024,
          input: { unit: "bytes", size: 1024 },
          output: { unit: "bytes", size: 1024 },
          sharedPool: false,
          graceMs: 1,
          settlementMs: 1,
          timeoutMs: null,
          stdin: false,
          argv: ["/bin/true"],
        },
      });
      return encodeFrame(m.kind, m.body);
    })(),
  ],
  [
    "an execution's cancel",
    (() => {
      const m = encodeHostMessage({ type: "cancel", key, cause: "cancel" });
      return encodeFrame(m.kind, m.body);
    })(),
  ],
  ["a guest-only kind", Uint8Array.of(0, 0, 0, 0, Kind.Pong)],
  ["an unassigned kind 27", Uint8Array.of(0, 0, 0, 0, 27)],
  ["an unassigned kind 31", Uint8Array.of(0, 0, 0, 0, 31)],
  ["a header beyond its kind's limit, before its body", Uint8Array.of(1, 0, 4, 0, Kind.Echo)],
];

Deno.test("messages that end serving with a failure", async (t) => {
  for (const [name, bytes] of REFUSED) {
    await t.step(name, async () => {
      const s = new MemoryStream();
      const served = serve(s.guest, { log });
      s.sendRaw(bytes);
      const end = await served;
      assert.equal(end.ok, false, name);
    });
  }
});
