import assert from "node:assert/strict";
import { IdentityError, join } from "./identity.ts";

const opts = (dataDir: string, fetchImpl: typeof fetch) => ({
  dataDir,
  joinUrl: "https://10.0.2.100/v1/join",
  token: "join-1",
  role: "ramdisk",
  hostname: "h",
  agentVersion: "test",
  fetch: fetchImpl,
});

Deno.test("join() that cannot reach the gateway fails join-unreachable, naming the URL and the cause, and writes nothing", async () => {
  const dir = `${await Deno.makeTempDir()}/data`;
  try {
    const refused: typeof fetch = () =>
      Promise.reject(new TypeError("fetch failed", { cause: new Error("Connection refused (os error 111)") }));
    await assert.rejects(
      join(opts(dir, refused)),
      (e) =>
        e instanceof IdentityError && e.reason === "join-unreachable" &&
        e.message === "cannot reach https://10.0.2.100/v1/join (fetch failed: Connection refused (os error 111))",
    );
    await assert.rejects(Deno.stat(dir), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir.slice(0, -"/data".length), { recursive: true });
  }
});

Deno.test("join() lets an error that is not fetch's network failure through unchanged", async () => {
  const boom = new RangeError("not a network failure");
  await assert.rejects(join(opts("/nonexistent-bcd-test", () => Promise.reject(boom))), (e) => e === boom);
});
