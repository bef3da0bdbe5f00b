import assert from "node:assert/strict";
import {
  CAPABILITY_BYTES,
  decodeAttach,
  encodeAttach,
  encodeFrame,
  formatCapability,
  Kind,
  parseCapability,
} from "../core/framing/mod.ts";
import { silentLogger } from "../core/log/mod.ts";
import { ClientEnded } from "../runtimes/guest/framing_errors.ts";
import { FramingClient } from "../runtimes/guest/framing_client.ts";
import { AttachGate } from "./attach_gate.ts";
import { MemoryStream } from "./memory_transport.ts";
import { serve } from "./serve.ts";

const log = silentLogger();
const cap = crypto.getRandomValues(new Uint8Array(CAPABILITY_BYTES));
const nonce = crypto.getRandomValues(new Uint8Array(16));
const frame = (kind: number, body: Uint8Array = new Uint8Array(0)) => ({ kind, body });

Deno.test("the gate answers Attach by the capability and drops every other message until an epoch attached", () => {
  const g = new AttachGate(cap, log);
  assert.equal(g.take(frame(Kind.Ping)), "dropped", "before Attach");
  const wrong = crypto.getRandomValues(new Uint8Array(CAPABILITY_BYTES));
  assert.deepEqual(
    g.take(frame(Kind.Attach, encodeAttach({ capability: wrong, nonce }))),
    encodeFrame(Kind.AttachRefused, nonce),
  );
  assert.equal(g.take(frame(Kind.Probe)), "dropped", "a refused attach serves nothing");
  assert.equal(g.take(frame(Kind.Attach, new Uint8Array(7))), "dropped", "an Attach that does not decode");
  assert.deepEqual(
    g.take(frame(Kind.Attach, encodeAttach({ capability: cap, nonce }))),
    encodeFrame(Kind.Attached, nonce),
  );
  assert.equal(g.take(frame(Kind.Ping)), null, "attached: served");
  g.reset();
  assert.equal(g.take(frame(Kind.Ping)), "dropped", "a reset ends the attachment");
});

Deno.test("a gate without a capability serves any host and answers Attach with Attached", () => {
  const g = new AttachGate(null, log);
  assert.equal(g.take(frame(Kind.Ping)), null);
  assert.deepEqual(
    g.take(frame(Kind.Attach, encodeAttach({ capability: cap, nonce }))),
    encodeFrame(Kind.Attached, nonce),
  );
});

Deno.test("Attach's body: the capability then the nonce; other lengths refused; capabilities as 64 hex digits", () => {
  assert.deepEqual(decodeAttach(encodeAttach({ capability: cap, nonce })), { capability: cap, nonce });
  assert.throws(() => decodeAttach(new Uint8Array(47)), /attach: 47 bytes, not 48/);
  assert.throws(() => encodeAttach({ capability: cap.slice(1), nonce }), RangeError);
  assert.deepEqual(parseCapability(formatCapability(cap) + "\n"), cap);
  assert.throws(() => parseCapability("ABC"), RangeError);
});

Deno.test("serve with a capability: the client that names it attaches; another is refused capability-refused", async () => {
  const s = new MemoryStream();
  const served = serve(s.guest, { log, capability: cap });
  // The refused host's end goes away as a reset (its close would end the stream for good).
  const first = { ...s.host, close: () => s.reattach() };
  await assert.rejects(
    FramingClient.attach(first, { capability: crypto.getRandomValues(new Uint8Array(CAPABILITY_BYTES)) }),
    (e: unknown) => e instanceof ClientEnded && e.reason === "refused" && /capability-refused/.test(e.message),
  );
  // Bytes of the earlier epoch and a Ping before the Attach: dropped, and the client finds its answer after them.
  s.sendRaw(encodeFrame(Kind.Ping));
  const c = await FramingClient.attach(s.host, { capability: cap });
  await c.ping();
  assert.equal(await c.stop(), null);
  assert.deepEqual(await served, { ok: true, reason: "stopped" });
});
