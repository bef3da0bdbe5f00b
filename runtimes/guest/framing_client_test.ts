import assert from "node:assert/strict";
import {
  Decoder,
  defaultRootConfig,
  encodeFrame,
  encodeReady,
  encodeRootFailure,
  FramingError,
  Kind,
} from "../../core/framing/mod.ts";
import { MemoryStream } from "../../guest/memory_transport.ts";
import { RESET } from "../../guest/transport.ts";
import { ClientEnded, ReceiveTimeout } from "./framing_errors.ts";
import { BundleTooLarge, FramingClient } from "./framing_client.ts";

/** Reads what the client sent, as frames. */
async function nextHostFrame(s: MemoryStream, d: Decoder): Promise<{ kind: number; body: Uint8Array }> {
  for (;;) {
    const f = d.next();
    if (f) return { kind: f.kind, body: f.body.slice() };
    const x = await s.guest.read();
    if (x === null || x === RESET) throw new Error("host ended");
    d.feed(x);
  }
}

Deno.test("answers that span writes, and writes that end one answer and start the next", async () => {
  const s = new MemoryStream();
  const c = await FramingClient.attach(s.host);
  const d = new Decoder({ from: "host" });
  const pong = encodeFrame(Kind.Pong);
  const echo = encodeFrame(Kind.Echo, Uint8Array.of(1, 2, 3));
  const p = c.ping();
  await nextHostFrame(s, d);
  const both = new Uint8Array([...pong, ...echo]);
  for (const b of both.subarray(0, 8)) await s.guest.write(Uint8Array.of(b));
  await p;
  await s.guest.write(both.subarray(8));
  const m = await c.receive(1000);
  assert.deepEqual([m.kind, ...m.body], [Kind.Echo, 1, 2, 3]);
  c.close();
});

Deno.test("a receive that times out inside a message keeps what arrived, then returns the whole message", async () => {
  const s = new MemoryStream();
  const c = await FramingClient.attach(s.host);
  const echo = encodeFrame(Kind.Echo, Uint8Array.of(9, 9, 9, 9));
  await s.guest.write(echo.subarray(0, 6));
  await assert.rejects(c.receive(20), ReceiveTimeout);
  assert.equal(c.ended, null);
  await s.guest.write(echo.subarray(6));
  assert.deepEqual([...(await c.receive(1000)).body], [9, 9, 9, 9]);
  c.close();
});

Deno.test("a request whose answer is late ends the client, and later calls fail", async () => {
  const s = new MemoryStream();
  const c = await FramingClient.attach(s.host, { requestTimeoutMs: 30 });
  await assert.rejects(c.ping(), (e: unknown) => e instanceof ClientEnded && e.reason === "late");
  await s.guest.write(encodeFrame(Kind.Pong));
  await assert.rejects(c.ping(), ClientEnded);
  await assert.rejects(c.receive(10), ClientEnded);
});

Deno.test("messages that end the client", async (t) => {
  const rows: [string, Uint8Array, string][] = [
    ["a host-only kind", encodeFrame(Kind.Stop), "malformed"],
    ["an unassigned kind", Uint8Array.of(0, 0, 0, 0, 30), "malformed"],
    ["a header beyond the limit, before its body", Uint8Array.of(1, 0, 4, 0, Kind.Echo), "malformed"],
    ["an answer of another kind", encodeFrame(Kind.Stopped), "unexpected"],
  ];
  for (const [name, bytes, reason] of rows) {
    await t.step(name, async () => {
      const s = new MemoryStream();
      const c = await FramingClient.attach(s.host);
      const p = c.ping();
      await s.guest.write(bytes);
      await assert.rejects(p, (e: unknown) => e instanceof ClientEnded && e.reason === reason);
    });
  }
});

Deno.test("answers whose bodies do not decode end the client", async (t) => {
  for (
    const [name, frame, call] of [
      ["Ready with a bad build", encodeFrame(Kind.Ready, Uint8Array.of(3, 97)), "root"],
      ["RootFailed with stage 9", encodeFrame(Kind.RootFailed, Uint8Array.of(9)), "root"],
      ["Report with a bad fact", encodeFrame(Kind.Report, new TextEncoder().encode("K=v\n")), "probe"],
      ["an execution message cut short", encodeFrame(Kind.ExecStarted, new Uint8Array(3)), "probe"],
    ] as const
  ) {
    await t.step(name, async () => {
      const s = new MemoryStream();
      const c = await FramingClient.attach(s.host);
      const p = call === "root" ? c.configureRoot(defaultRootConfig()) : c.probe({ name: "mounts", args: [] });
      await s.guest.write(frame);
      await assert.rejects(p, (e: unknown) => e instanceof ClientEnded && e.reason === "undecodable");
    });
  }
});

Deno.test("configureRoot returns Ready's build or the failed stage; stop returns a failed teardown", async () => {
  const s = new MemoryStream();
  const c = await FramingClient.attach(s.host);
  const d = new Decoder({ from: "host" });
  let p: Promise<unknown> = c.configureRoot(defaultRootConfig());
  assert.equal((await nextHostFrame(s, d)).kind, Kind.RootConfig);
  await s.guest.write(encodeFrame(Kind.Ready, encodeReady("0.1.0")));
  assert.deepEqual(await p, { ready: "0.1.0" });
  p = c.configureRoot(defaultRootConfig());
  await nextHostFrame(s, d);
  await s.guest.write(encodeFrame(Kind.RootFailed, encodeRootFailure({ stage: "assembly", problem: "bad image" })));
  assert.deepEqual(await p, { failed: { stage: "assembly", problem: "bad image" } });
  p = c.stop();
  await nextHostFrame(s, d);
  await s.guest.write(encodeFrame(Kind.RootFailed, encodeRootFailure({ stage: "teardown", problem: "busy" })));
  await s.guest.write(encodeFrame(Kind.Stopped));
  assert.deepEqual(await p, { stage: "teardown", problem: "busy" });
});

Deno.test("a message beyond the framing's limit is refused before sending, and the client goes on", async () => {
  const s = new MemoryStream();
  const c = await FramingClient.attach(s.host);
  await assert.rejects(() => c.echo(new Uint8Array(256 * 1024 + 1)), FramingError);
  assert.equal(c.ended, null);
  await assert.rejects(
    () => c.installAgentConfig("v-1", new Uint8Array(11), { maxWireBytes: 10 }),
    BundleTooLarge,
  );
  assert.equal(await c.installAgentConfig("v-1", new Uint8Array(11), { ifVersion: "v-1" }), false);
  assert.equal(c.ended, null);
  c.close();
});

Deno.test("a sync attach drops the old epoch's tail before its Echo's answer", async () => {
  const s = new MemoryStream();
  const attaching = FramingClient.attach(s.host, { sync: true });
  const d = new Decoder({ from: "host" });
  const sent = await nextHostFrame(s, d);
  assert.equal(sent.kind, Kind.Echo);
  // The tail of a guest message of the old epoch, which is no message boundary, then the answer.
  await s.guest.write(Uint8Array.of(7, 0, 0, 0, 3, 1, 2));
  await s.guest.write(encodeFrame(Kind.Echo, sent.body).subarray(0, 10));
  await s.guest.write(Uint8Array.of(...encodeFrame(Kind.Echo, sent.body).subarray(10), ...encodeFrame(Kind.Pong)));
  const c = await attaching;
  assert.equal((await c.receive(100)).kind, Kind.Pong);
  c.close();
});

Deno.test("the end of the stream ends the client", async () => {
  const s = new MemoryStream();
  const c = await FramingClient.attach(s.host);
  s.guest.close();
  await c.done;
  assert.equal(c.ended?.reason, "session");
  await assert.rejects(c.ping(), ClientEnded);
});

Deno.test("a send that times out, or whose transport fails, ends the client", async () => {
  const stuck = {
    read: () => new Promise<number | null>(() => {}),
    write: () => new Promise<number>(() => {}),
    close: () => {},
  };
  const c = await FramingClient.attach(stuck, { sendTimeoutMs: 30 });
  await assert.rejects(c.ping(), (e: unknown) => e instanceof ClientEnded && e.reason === "send");
  await assert.rejects(c.ping(), ClientEnded);
  const failing = { ...stuck, write: () => Promise.reject(new Error("broken pipe")) };
  const d = await FramingClient.attach(failing);
  await assert.rejects(d.send(Kind.Ping), (e: unknown) => e instanceof ClientEnded && e.reason === "send");
  assert.equal(d.ended?.reason, "send");
});
