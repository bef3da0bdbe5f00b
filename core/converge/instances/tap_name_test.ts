import assert from "node:assert/strict";
import { IFNAME_MAX, MAX_NICS, TAP_PREFIX, tapName } from "./tap_name.ts";

Deno.test("tapName() is bc + 10 hex digits of the id's SHA-256 + the NIC index, within 15 bytes", () => {
  // `printf 0b6c9c1e-3f7a-4d55-9d47-2a7a1c5e6f01 | sha256sum` starts f79ee4f508.
  const id = "0b6c9c1e-3f7a-4d55-9d47-2a7a1c5e6f01";
  const n = tapName(id, 0);
  assert.equal(n, "bcf79ee4f5080");
  assert.ok(n.startsWith(TAP_PREFIX));
  assert.equal(tapName(id, MAX_NICS - 1).length, IFNAME_MAX);
  assert.equal(tapName(id, 35), `${n.slice(0, 12)}z`);
  assert.equal(tapName(id, 36), `${n.slice(0, 12)}10`);
});

Deno.test("tapName() is stable and differs between instances and NICs", () => {
  assert.equal(tapName("a", 1), tapName("a", 1));
  assert.notEqual(tapName("a", 0), tapName("b", 0));
  assert.notEqual(tapName("a", 0), tapName("a", 1));
});

Deno.test("tapName() refuses an empty id and an index it cannot spell", () => {
  assert.throws(() => tapName("", 0), RangeError);
  assert.throws(() => tapName("a", -1), RangeError);
  assert.throws(() => tapName("a", 1.5), RangeError);
  assert.throws(() => tapName("a", MAX_NICS), RangeError);
});
