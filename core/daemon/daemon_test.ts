import assert from "node:assert/strict";
import { generateSigningKeyPair } from "../pki/ed25519.ts";
import { memoryLogger } from "../log/mod.ts";
import { ConditionSet } from "../converge/conditions.ts";
import type { DaemonHost, ReleaseFetcher, ReleaseState } from "./ports.ts";
import {
  checkReleaseVersion,
  checkTarget,
  ReleaseRefused,
  type ReleaseTarget,
  signRelease,
  verifyReleaseSignature,
} from "./release.ts";
import { DaemonConverger } from "./converger.ts";
import { daemonUpgradeHandler } from "./upgrade_handler.ts";
import { packPayload, unpackResult } from "../../proto/mod.ts";
import type { CommandBody } from "../commands/command.ts";
import { LeftForRecovery } from "../commands/rejection.ts";

const SHA = "ab".repeat(32);

function refused(reason: string) {
  return (e: unknown) => {
    assert.ok(e instanceof ReleaseRefused, String(e));
    assert.equal(e.reason, reason, e.message);
    return true;
  };
}

Deno.test("release versions are directory names: no dots alone, no .., at most 64 of [0-9A-Za-z._+-]", () => {
  for (const v of ["0.2.0", "1.0.0-rc.1", "2026.12.01+abc", "v3"]) assert.equal(checkReleaseVersion(v), v);
  for (const v of ["", ".", "..", "../x", "a/b", "1..2", ".hidden", "x".repeat(65), 7]) {
    assert.throws(() => checkReleaseVersion(v), refused("bad-version"), String(v));
  }
  const t = {
    version: "0.2.0",
    url: "https://r.example/bcd-node-0.2.0.tar.gz",
    sha256: SHA,
    signature: new Uint8Array(),
  };
  assert.equal(checkTarget(t), t);
  assert.throws(() => checkTarget({ ...t, url: "http://r.example/x" }), refused("not-https"));
  assert.throws(() => checkTarget({ ...t, sha256: "AB".repeat(32) }), refused("bad-digest"));
});

Deno.test("release signatures: Ed25519 under purpose release over the digest, by a release key; unsigned only without keys", async () => {
  const key = await generateSigningKeyPair();
  const other = await generateSigningKeyPair();
  const sig = await signRelease(key.privateKey, SHA);
  await verifyReleaseSignature(SHA, sig, [other.publicKey, key.publicKey]);
  await verifyReleaseSignature(SHA, new Uint8Array(), []);
  await assert.rejects(verifyReleaseSignature(SHA, new Uint8Array(), [key.publicKey]), refused("BAD_SIGNATURE"));
  await assert.rejects(verifyReleaseSignature(SHA, sig, [other.publicKey]), refused("BAD_SIGNATURE"));
  await assert.rejects(verifyReleaseSignature("cd".repeat(32), sig, [key.publicKey]), refused("BAD_SIGNATURE"));
});

/** A helper and a fetcher in memory, recording what was asked. */
function fakes(state: Partial<ReleaseState> = {}, fetchError?: ReleaseRefused) {
  const calls: string[] = [];
  const host: DaemonHost = {
    status: () => Promise.resolve({ current: "0.1.0", previous: null, pending: null, failed: null, ...state }),
    install: (r) => (calls.push(`install ${r.version}`), Promise.resolve()),
    confirm: (v) => (calls.push(`confirm ${v}`), Promise.resolve()),
  };
  const fetcher: ReleaseFetcher = {
    fetch: (t: ReleaseTarget) => {
      calls.push(`fetch ${t.url}`);
      return fetchError ? Promise.reject(fetchError) : Promise.resolve();
    },
  };
  return { host, fetcher, calls };
}

const ctx = () => ({ generation: 3, conditions: new ConditionSet(), log: memoryLogger("debug").logger });
const section = (version: string, signature: Uint8Array = new Uint8Array()) => ({
  version,
  url: `https://r.example/${version}.tar.gz`,
  sha256: SHA,
  signature,
});

Deno.test("the daemon section's converger, row by row", async (t) => {
  const key = await generateSigningKeyPair();
  const signed = await signRelease(key.privateKey, SHA);
  const run = async (
    desired: ReturnType<typeof section> | undefined,
    f: ReturnType<typeof fakes>,
    keys: Uint8Array[] = [],
  ) => {
    const c = new DaemonConverger({
      running: "0.1.0",
      host: f.host,
      fetcher: f.fetcher,
      releaseKeys: () => Promise.resolve(keys),
    });
    const running = await c.observe(ctx());
    return await c.apply(c.plan(desired, running), desired, ctx());
  };
  await t.step("an empty section or the running version: converged, nothing fetched", async () => {
    const f = fakes();
    assert.equal((await run(undefined, f)).kind, "converged");
    assert.equal((await run(section("0.1.0"), f)).kind, "converged");
    assert.deepEqual(f.calls, []);
  });
  await t.step("a new signed version: fetched, installed by the helper, PROGRESSING Upgrading", async () => {
    const f = fakes();
    const o = await run(section("0.2.0", signed), f, [key.publicKey]);
    assert.equal(o.kind, "progressing");
    assert.equal(o.kind === "progressing" && o.reason, "Upgrading");
    assert.deepEqual(f.calls, ["fetch https://r.example/0.2.0.tar.gz", "install 0.2.0"]);
  });
  await t.step("unsigned while the bundle holds release keys: FAILED BAD_SIGNATURE before any download", async () => {
    const f = fakes();
    const o = await run(section("0.2.0"), f, [key.publicKey]);
    assert.deepEqual(o.kind === "failed" && o.reason, "BAD_SIGNATURE");
    assert.deepEqual(f.calls, []);
  });
  await t.step("a digest that does not match: FAILED bad-digest, nothing installed", async () => {
    const f = fakes({}, new ReleaseRefused("bad-digest", "hashes to something else"));
    const o = await run(section("0.2.0"), f);
    assert.deepEqual(o.kind === "failed" && o.reason, "bad-digest");
    assert.deepEqual(f.calls, ["fetch https://r.example/0.2.0.tar.gz"]);
  });
  await t.step("the network fails: PROGRESSING, retried next pass", async () => {
    const f = fakes({}, new ReleaseRefused("download-failed", "HTTP 503"));
    assert.equal((await run(section("0.2.0"), f)).kind, "progressing");
  });
  await t.step("a version the helper rolled back: FAILED rolled-back, not fetched again", async () => {
    const f = fakes({ failed: { version: "0.2.0", reason: "rolled-back", message: "no Welcome in 300000 ms" } });
    const o = await run(section("0.2.0"), f);
    assert.deepEqual(o.kind === "failed" && o.reason, "rolled-back");
    assert.deepEqual(f.calls, []);
  });
  await t.step("a swap to it awaiting its confirm: PROGRESSING, nothing fetched", async () => {
    const f = fakes({ pending: { version: "0.2.0", previous: "0.1.0", deadlineMs: 1 } });
    assert.equal((await run(section("0.2.0"), f)).kind, "progressing");
    assert.deepEqual(f.calls, []);
  });
});

Deno.test("daemon.upgrade: the new process answers SUCCEEDED with both versions; a refusal fails with its reason", async () => {
  const body = (version: string): CommandBody => {
    const any = packPayload("daemon.upgrade", { version, url: `https://r.example/${version}.tar.gz`, sha256: SHA });
    return {
      id: "c1",
      nodeId: "n1",
      seq: 1,
      kind: "daemon.upgrade",
      payload: { typeUrl: any.type_url, value: any.value },
      lane: "bulk",
      minGeneration: 0,
      retrySafe: true,
      idempotencyKey: "",
      selfTerminating: true,
      attested: false,
      workflowId: "",
      stepId: "",
      traceparent: "",
      batchId: "",
    };
  };
  const log = memoryLogger("debug").logger;
  const f = fakes({ current: "0.2.0", previous: "0.1.0" });
  const h = daemonUpgradeHandler({
    running: "0.2.0",
    host: f.host,
    fetcher: f.fetcher,
    releaseKeys: () => Promise.resolve([]),
  });
  const out = await h.run({
    command: body("0.2.0"),
    signal: new AbortController().signal,
    bootId: "b",
    logger: log,
  });
  const r = unpackResult("daemon.upgrade", { type_url: out.result!.typeUrl, value: out.result!.value });
  assert.deepEqual({ previous: r.previous_version, version: r.version }, { previous: "0.1.0", version: "0.2.0" });
  const rolled = fakes({ failed: { version: "0.3.0", reason: "rolled-back", message: "m" } });
  const h2 = daemonUpgradeHandler({
    running: "0.2.0",
    host: rolled.host,
    fetcher: rolled.fetcher,
    releaseKeys: () => Promise.resolve([]),
  });
  await assert.rejects(
    h2.run({ command: body("0.3.0"), signal: new AbortController().signal, bootId: "b", logger: log }),
    (e: unknown) => (e as { code?: string }).code === "rolled-back",
  );
  let slept = 0;
  const f3 = fakes();
  const h3 = daemonUpgradeHandler({
    running: "0.1.0",
    host: f3.host,
    fetcher: f3.fetcher,
    releaseKeys: () => Promise.resolve([]),
    sleep: () => (slept++, Promise.resolve()),
  });
  await assert.rejects(
    h3.run({ command: body("0.2.0"), signal: new AbortController().signal, bootId: "b", logger: log }),
    (e: unknown) => (e as { code?: string }).code === "upgrade-failed",
    "installed, but this process was never restarted",
  );
  assert.equal(slept, 1);
  assert.deepEqual(f3.calls, ["fetch https://r.example/0.2.0.tar.gz", "install 0.2.0"]);
  // The daemon stops while the handler waits for it: no result, the entry is left for the next process.
  const stopping = new AbortController();
  const f4 = fakes();
  const h4 = daemonUpgradeHandler({
    running: "0.1.0",
    host: f4.host,
    fetcher: f4.fetcher,
    releaseKeys: () => Promise.resolve([]),
  });
  const run4 = h4.run({
    command: body("0.2.0"),
    signal: new AbortController().signal,
    stopping: stopping.signal,
    bootId: "b",
    logger: log,
  });
  await new Promise((r) => setTimeout(r, 0));
  stopping.abort();
  await assert.rejects(run4, LeftForRecovery);
});
