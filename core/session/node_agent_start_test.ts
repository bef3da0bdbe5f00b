import assert from "node:assert/strict";
import { bcd, encodeMessage } from "../../proto/mod.ts";
import type { SectionConverger } from "../converge/engine.ts";
import { Journal } from "../journal/mod.ts";
import { startOfflineAgent } from "./node_agent_testing.ts";

function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => resolve = r);
  return { promise, resolve };
}

// Issue 24: a node restarted with a spec in its journal ran that spec's whole first pass (a runtime's listing, domain
// starts, nftables) before NodeAgent.start returned, so its first Hello waited for the host. Hello carries the held
// generation and hash, not the pass's outcome.
Deno.test("a node restarted with a held spec answers its first Hello while the spec's first pass still runs; stop waits for the pass", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-agent-start-test-" });
  const journal = await Journal.open({ dataDir: dir, bootId: "boot-1", nodeId: "n-1" });
  const passStarted = deferred();
  const gate = deferred();
  let passEnded = false;
  const blocking: SectionConverger = {
    section: "telemetry",
    async observe() {
      passStarted.resolve();
      await gate.promise;
      passEnded = true;
      return {};
    },
    plan: () => [],
    async apply() {
      return await Promise.resolve({ kind: "converged" as const });
    },
  };
  // Only bounds a failure (the old order never returns from start while the pass waits): it opens the gate.
  const fallback = setTimeout(() => gate.resolve(), 30_000);
  try {
    const spec = encodeMessage(bcd.v1.DesiredStateBody, {
      node_id: "n-1",
      generation: 3,
      spec_hash: "h3",
      full: { telemetry: {} },
    });
    await journal.putSpec({ generation: 3, bytes: spec, hash: "h3" });
    const agent = await startOfflineAgent(journal, { convergers: () => [blocking] });
    await passStarted.promise;
    const hello = await agent.hello({ nonce: new Uint8Array(32), gateway_id: "gw" });
    assert.equal(passEnded, false, "the Hello was built while the first pass waited on the host");
    assert.equal(hello.applied_generation, 3);
    assert.equal(hello.applied_spec_hash, "h3");
    let passAwaited = false;
    const waited = agent.startPass.then(() => passAwaited = true);
    let stopped = false;
    const stopping = agent.stop().then(() => stopped = true);
    await Promise.resolve();
    assert.equal(stopped, false, "stop waits for the pass");
    assert.equal(passAwaited, false);
    gate.resolve();
    await stopping;
    await waited;
    assert.equal(passEnded, true);
    assert.equal(passAwaited, true, "startPass resolved once the pass ended");
  } finally {
    clearTimeout(fallback);
    gate.resolve();
    await journal.close();
    await Deno.remove(dir, { recursive: true });
  }
});
