import assert from "node:assert/strict";
import { allMessageTypes, fillVariants, plain, reflectionRoot, staticClassOf } from "./_reflect_fill.ts";
import { checkMessageJson } from "./json_check.ts";
import { decodeMessage, encodeMessage } from "./wire.ts";
import "./gen/bcd_from_object.js";

const root = reflectionRoot();
const types = allMessageTypes(root);

Deno.test("the descriptor holds every bcd.v1 message and each has a generated class", () => {
  const bcdTypes = types.filter((t) => t.fullName.startsWith(".bcd.v1."));
  assert.ok(bcdTypes.length >= 100, `only ${bcdTypes.length} bcd.v1 messages`);
  for (const t of types) assert.ok(staticClassOf(t), `no generated class for ${t.fullName}`);
});

Deno.test("every message round-trips with every field set", async (t) => {
  for (const type of types) {
    await t.step(type.fullName.slice(1), () => {
      const cls = staticClassOf(type)!;
      for (const [variant, value] of fillVariants(type).entries()) {
        const bytes = encodeMessage(cls, value as never);
        const decoded = decodeMessage(cls, bytes);
        assert.deepEqual(plain(type, decoded), plain(type, value), `variant ${variant}`);
        // Encoding the decoded message gives the same bytes: nothing is lost or reordered.
        assert.deepEqual(encodeMessage(cls, decoded as never), bytes, `variant ${variant} re-encoded`);
        // And the reflection encoder (another implementation of the same schema) agrees byte for byte.
        assert.deepEqual(type.encode(type.fromObject(value)).finish(), bytes, `variant ${variant} by reflection`);
      }
    });
  }
});

Deno.test("a message with every field set is not empty, so the fill reaches every field", () => {
  for (const type of types) {
    for (const value of fillVariants(type)) {
      const setFields = type.fieldsArray.filter((f) => Object.hasOwn(value, f.name)).length;
      const oneofMembers = type.oneofsArray.reduce((n, o) => n + o.fieldsArray.length - 1, 0);
      assert.equal(setFields, type.fieldsArray.length - oneofMembers, type.fullName);
    }
  }
});

Deno.test("every message's JSON object form passes the strict JSON check and reads back to the same bytes", () => {
  const opts = { enums: String, bytes: String, longs: Number, defaults: false, arrays: false, oneofs: false };
  for (const type of types) {
    const cls = staticClassOf(type)! as unknown as {
      fromObject(o: unknown): unknown;
      toObject(m: unknown, o: unknown): unknown;
    };
    for (const value of fillVariants(type)) {
      const message = cls.fromObject(value);
      const json = JSON.parse(JSON.stringify(cls.toObject(message, opts)));
      checkMessageJson(type.fullName.slice(1), json);
      const bytes = encodeMessage(staticClassOf(type)!, value as never);
      assert.deepEqual(encodeMessage(staticClassOf(type)!, cls.fromObject(json) as never), bytes, type.fullName);
    }
  }
});
