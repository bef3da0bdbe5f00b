/**
 * The command signature check runs on a thread of its own (`core/pki/ed25519_thread.ts`), which inherits the role's
 * flags: every agent role that checks command signatures must be able to start it under exactly its own flags, and
 * the idle thread must not keep the role's process from ending.
 */
import assert from "node:assert/strict";
import { roleFlags } from "./permissions.ts";

const ROOT = new URL("../", import.meta.url).pathname;

for (const role of ["node", "site", "ramdisk", "sim"] as const) {
  Deno.test(`the ${role} role's flags run the Ed25519 thread: a good signature verifies, a bad one is refused, the process ends`, async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", ...roleFlags(role), `${ROOT}fixtures/permissions/ed25519_thread_probe.ts`],
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
      // Not a timing threshold: a thread that held the process open would otherwise hang the suite.
      signal: AbortSignal.timeout(120_000),
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, stderr);
    assert.equal(new TextDecoder().decode(out.stdout).trim(), "verified refused", stderr);
  });
}
