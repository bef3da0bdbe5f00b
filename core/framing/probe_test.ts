import assert from "node:assert/strict";
import { BodyError } from "./errors.ts";
import { decodeFacts, decodeProbe, encodeFacts, encodeProbe, escapeValue, unescapeValue } from "./probe.ts";

const enc = (s: string) => new TextEncoder().encode(s);

Deno.test("probes: names and arguments that decode", () => {
  assert.deepEqual(decodeProbe(enc("mounts")), { name: "mounts", args: [] });
  assert.deepEqual(decodeProbe(enc("copy-up etc/os-release")), { name: "copy-up", args: ["etc/os-release"] });
  assert.deepEqual(decodeProbe(enc("a1-b x y")), { name: "a1-b", args: ["x", "y"] });
  assert.deepEqual(decodeProbe(encodeProbe({ name: "rename", args: ["usr/ä"] })), { name: "rename", args: ["usr/ä"] });
});

Deno.test("probes that do not decode", async (t) => {
  for (
    const text of ["", "Mounts", "1mounts", "-x", "mo_unts", "mounts ", "mounts  x", "mounts x\ty", "mounts \u0001"]
  ) {
    await t.step(JSON.stringify(text), () => assert.throws(() => decodeProbe(enc(text)), BodyError));
  }
  assert.throws(() => decodeProbe(Uint8Array.of(0xff)), BodyError);
  assert.throws(() => encodeProbe({ name: "x", args: ["a b"] }), BodyError);
});

Deno.test("facts keep their order and escape backslash, newline and carriage return", () => {
  const facts: [string, string][] = [["root.type", "overlay"], ["z", "a\\b\nc\rd"], ["a-1", ""]];
  const body = encodeFacts(facts);
  assert.equal(new TextDecoder().decode(body), "root.type=overlay\nz=a\\\\b\\nc\\rd\na-1=\n");
  assert.deepEqual(decodeFacts(body), facts);
  assert.equal(unescapeValue(escapeValue("\\n")), "\\n");
});

Deno.test("facts that do not decode", async (t) => {
  for (const text of ["k=v", "K=v\n", "k v\n", "k=1\nk=2\n", "=v\n", "k=\\x\n", "k=\\\n", "k=a\rb\n", "k_1=v\n"]) {
    await t.step(JSON.stringify(text), () => assert.throws(() => decodeFacts(enc(text)), BodyError));
  }
  assert.throws(() => encodeFacts([["k", "1"], ["k", "2"]]), BodyError);
  assert.deepEqual(decodeFacts(new Uint8Array(0)), []);
});
