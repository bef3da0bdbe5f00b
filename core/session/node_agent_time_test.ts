import assert from "node:assert/strict";
import { bcd, encodeMessage } from "../../proto/mod.ts";
import { Journal } from "../journal/mod.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";
import { startOfflineAgent } from "./node_agent_testing.ts";

const SERVER_NOW = Date.UTC(2026, 11, 1, 12, 0, 0);
const AHEAD_MS = 10 * 60_000;

// Found by the fleet run (test:fleet): a node whose clock ran 5–10 minutes ahead, restarted with a spec in its journal,
// refused fresh commands EXPIRED after its Welcome. At start the held spec is checked at serverNow(), which before any
// Welcome is the host clock; that reading became the floor serverNow() never goes below, so the Welcome's offset was
// ignored until the server's clock caught up with the host's.
Deno.test("a clock ahead of the server does not hold server time ahead after Welcome, even with a spec held at start", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-agent-time-test-" });
  const clock = new FakeClock(SERVER_NOW + AHEAD_MS);
  const journal = await Journal.open({ dataDir: dir, bootId: "boot-1", nodeId: "n-1", clock });
  try {
    const spec = encodeMessage(bcd.v1.DesiredStateBody, {
      node_id: "n-1",
      generation: 1,
      spec_hash: "h1",
      full: { telemetry: {} },
    });
    await journal.putSpec({ generation: 1, bytes: spec, hash: "h1" });
    const agent = await startOfflineAgent(journal, { clock });
    try {
      assert.equal(agent.held?.generation, 1, "the held spec was checked and taken at start");
      await agent.welcome({
        session_epoch: 1,
        server_time: { seconds: Math.floor(SERVER_NOW / 1000), nanos: 0 },
      });
      assert.equal(agent.serverNow(), SERVER_NOW, "server time is the Welcome's, not the host clock's");
      await clock.advance(1000);
      assert.equal(agent.serverNow(), SERVER_NOW + 1000);
    } finally {
      await agent.stop();
    }
  } finally {
    await journal.close();
    await Deno.remove(dir, { recursive: true });
  }
});
