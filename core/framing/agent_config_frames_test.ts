import assert from "node:assert/strict";
import { BodyError } from "./errors.ts";
import {
  decodeInstallResult,
  decodeVersion,
  encodeInstallResult,
  encodeVersion,
  INSTALL_CODES,
  versionProblem,
} from "./agent_config_frames.ts";

Deno.test("versions: the grammar, the reserved current, and the empty version", () => {
  for (const ok of ["", "v-1", "A_b-9", "sha256-abc"]) assert.equal(versionProblem(ok), null, ok);
  for (const bad of ["current", "../x", "a/b", "a b", "é", "a.b"]) assert.notEqual(versionProblem(bad), null, bad);
  assert.equal(decodeVersion(encodeVersion("v-1")), "v-1");
  assert.throws(() => decodeVersion(Uint8Array.of(0xff)), BodyError);
});

Deno.test("every result code round-trips, an unknown one does not decode", () => {
  for (const code of Object.keys(INSTALL_CODES) as (keyof typeof INSTALL_CODES)[]) {
    assert.deepEqual(decodeInstallResult(encodeInstallResult({ code, problem: `p ${code}` })), {
      code,
      problem: `p ${code}`,
    });
  }
  assert.equal(encodeInstallResult({ code: "resource-exhausted", problem: "" })[0], 8);
  assert.throws(() => decodeInstallResult(Uint8Array.of(1)), BodyError);
  assert.throws(() => decodeInstallResult(new Uint8Array(0)), BodyError);
});
