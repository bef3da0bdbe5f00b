import assert from "node:assert/strict";
import { allMessageTypes, byteMutator, fillVariants, reflectionRoot, staticClassOf } from "./_reflect_fill.ts";
import { decodeMessage, encodeMessage, WireDecodeError } from "./wire.ts";

// Bounded mutation fuzzing: valid encodings of every message with every field set, with bytes flipped, inserted and
// removed by a seeded PRNG. Each result must decode or fail with WireDecodeError, never with another error.
Deno.test("mutated encodings of every message decode or fail with WireDecodeError, never another error", () => {
  const mutate = byteMutator(0x2545f491);
  let decoded = 0, refused = 0;
  for (const type of allMessageTypes(reflectionRoot())) {
    const cls = staticClassOf(type)!;
    for (const value of fillVariants(type)) {
      const valid = encodeMessage(cls, value as never);
      for (let round = 0; round < 60; round++) {
        const bytes = mutate(valid);
        try {
          decodeMessage(cls, bytes);
          decoded++;
        } catch (e) {
          assert.ok(e instanceof WireDecodeError, `${type.fullName} ${JSON.stringify(Array.from(bytes))}: ${e}`);
          refused++;
        }
      }
    }
  }
  assert.ok(decoded > 100 && refused > 100, `decoded ${decoded}, refused ${refused}`);
});
