import assert from "node:assert/strict";
import { bcd } from "./mod.ts";
import { defineNamespace } from "./classes.ts";
import { START_CODECS, startCodecsModule } from "./start_codecs.ts";
import { takeStartCodecs } from "./gen/bcd_start_codecs.js";

type Codec = (...args: unknown[]) => unknown;
type Cls = Record<string, Codec> & { encode: Codec; decode: Codec; toObject: Codec };

function classAt(ns: Record<string, unknown>, type: string): Cls {
  let cur: unknown = ns;
  for (const p of type.split(".").slice(1)) cur = (cur as Record<string, unknown>)[p];
  return cur as Cls;
}

// A second namespace from the same descriptor: its classes compile every codec from source on first call.
const freshRoot: Record<string, unknown> = {};
const fresh = freshRoot.bcd = defineNamespace(freshRoot, ["bcd"]);
freshRoot.google = defineNamespace(freshRoot, ["google"]);

Deno.test("the committed descriptor's classes take the carried codecs; a second namespace compiles its own", () => {
  for (const [type, key] of START_CODECS) {
    const local = type.split(".").slice(2).join("_");
    assert.equal(classAt(bcd, type)[key].name, `${key}_${local}`, `${type}.${key} is the carried codec`);
    assert.notEqual(classAt(fresh, type)[key].name, `${key}_${local}`, `the second ${type}.${key} is not`);
  }
  // A codec not carried compiles on its first call, as before.
  assert.ok(!START_CODECS.some(([t, k]) => t === "bcd.v1.Hello" && k === "decode"));
  assert.notEqual(bcd.v1.Hello.decode.name, "decode_Hello");
});

Deno.test("each type's carried codecs are handed out once", () => {
  const [type] = START_CODECS[0]!;
  void classAt(bcd, type); // defined: it took them
  assert.equal(takeStartCodecs(type, function C() {}, []), undefined);
  assert.equal(takeStartCodecs("bcd.v1.NoSuchType", function C() {}, []), undefined);
});

Deno.test("the carried codecs write and read what the codecs compiled from source do", () => {
  const cert = { body: new Uint8Array([1, 2, 3]), signature: new Uint8Array([4, 5]) };
  const hello = {
    node_id: "node-1",
    role: "node",
    boot_id: "b-1",
    applied_generation: 7,
    capabilities: ["devices.limits", "instance.volumes"],
    agent_version: "1.2.3",
    protocol_version: 2,
    unacked_results: [{ command_id: "c-1" }],
    last_event_seq: 2 ** 40,
    challenge_sig: new Uint8Array([8]),
    cert_chain: [cert, cert],
  };
  const samples: Record<string, Record<string, unknown>[]> = {
    "bcd.v1.Hello": [{}, hello],
    "bcd.v1.NodeFrame": [{}, { hello }],
    "bcd.v1.SignedCertificate": [{}, cert],
  };
  for (const [type, key] of START_CODECS) {
    if (key !== "encode") continue;
    const carried = classAt(bcd, type), compiled = classAt(fresh, type);
    const rows = samples[type];
    assert.ok(rows, `a sample of ${type}`);
    for (const props of rows) {
      const a = carried.encode(carried.create!(props)) as { finish(): Uint8Array };
      const b = compiled.encode(compiled.create!(props)) as { finish(): Uint8Array };
      assert.deepEqual(a.finish(), b.finish(), `${type} ${JSON.stringify(Object.keys(props))}`);
    }
  }
  // The decoders: bytes of each carried decoder's type, read by both, as objects.
  const bytes: Record<string, Uint8Array> = {
    "bcd.v1.SignedCertificate": bcd.v1.SignedCertificate.encode(cert).finish(),
    "bcd.v1.PublicKey": bcd.v1.PublicKey.encode({ key_id: "k1", public_key: new Uint8Array([9]), name: "r" }).finish(),
    "bcd.v1.Challenge": bcd.v1.Challenge.encode({
      nonce: new Uint8Array([4, 5]),
      gateway_id: "gw",
      server_time: { seconds: 1_900_000_000, nanos: 5 },
    }).finish(),
    "bcd.v1.TrustBundle": bcd.v1.TrustBundle.encode({
      version: 3,
      node_ca_roots: [{ key_id: "r1", public_key: new Uint8Array([7]) }],
      command_signing_roots: [{ key_id: "r2" }, { key_id: "r3" }],
      approver_threshold: 2,
    }).finish(),
    "bcd.v1.GatewayFrame": bcd.v1.GatewayFrame.encode({ challenge: { nonce: new Uint8Array([6]) } }).finish(),
  };
  for (const [type, key] of START_CODECS) {
    if (key !== "decode") continue;
    const carried = classAt(bcd, type), compiled = classAt(fresh, type);
    const b = bytes[type];
    assert.ok(b && b.length > 0, `bytes of ${type}`);
    const opts = { defaults: true, longs: Number };
    assert.deepEqual(
      carried.toObject(carried.decode(b), opts),
      compiled.toObject(compiled.decode(b), opts),
      type,
    );
  }
});

Deno.test("the module refuses a codec listed twice and a type outside bcd.v1", async (t) => {
  const rows: [string, [string, "encode" | "decode"][], RegExp][] = [
    ["listed twice", [["bcd.v1.Hello", "encode"], ["bcd.v1.Hello", "encode"]], /listed twice/],
    ["outside bcd.v1", [["google.protobuf.Any", "encode"]], /is not a bcd\.v1 message/],
    ["no such message", [["bcd.v1.NoSuchType", "decode"]], /no message bcd\.v1\.NoSuchType/],
  ];
  for (const [name, codecs, error] of rows) {
    await t.step(name, () => assert.throws(() => startCodecsModule(codecs), error));
  }
});
