import assert from "node:assert/strict";
import { allMessageTypes, fillVariants, reflectionRoot, staticClassOf } from "./_reflect_fill.ts";
import { decodeMessage, encodeMessage, WireDecodeError } from "./wire.ts";

// Bounded mutation fuzzing: valid encodings of every message with every field set, with bytes flipped, inserted and
// removed by a seeded PRNG. Each result must decode or fail with WireDecodeError, never with another error.
Deno.test("mutated encodings of every message decode or fail with WireDecodeError, never another error", () => {
  let seed = 0x2545f491;
  const rand = (n: number) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  let decoded = 0, refused = 0;
  for (const type of allMessageTypes(reflectionRoot())) {
    const cls = staticClassOf(type)!;
    for (const value of fillVariants(type)) {
      const valid = encodeMessage(cls, value as never);
      for (let round = 0; round < 60; round++) {
        const bytes = Array.from(valid);
        for (let m = 1 + rand(4); m > 0 && bytes.length > 0; m--) {
          const at = rand(bytes.length);
          const op = rand(3);
          if (op === 0) bytes[at] = rand(256);
          else if (op === 1) bytes.splice(at, 0, rand(256));
          else bytes.splice(at, 1);
        }
        try {
          decodeMessage(cls, new Uint8Array(bytes));
          decoded++;
        } catch (e) {
          assert.ok(e instanceof WireDecodeError, `${type.fullName} ${JSON.stringify(bytes)}: ${e}`);
          refused++;
        }
      }
    }
  }
  assert.ok(decoded > 100 && refused > 100, `decoded ${decoded}, refused ${refused}`);
});
