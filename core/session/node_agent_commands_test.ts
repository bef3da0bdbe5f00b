import assert from "node:assert/strict";
import {
  bcd,
  decodeGatewayFrame,
  encodeGatewayFrame,
  encodeMessage,
  type GatewayFrame,
  packPayload,
  type Props,
} from "../../proto/mod.ts";
import { FakeHandler } from "../commands/fake_handlers.ts";
import { HandlerRegistry } from "../commands/handlers.ts";
import { Journal } from "../journal/mod.ts";
import { memoryLogger } from "../log/mod.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";
import type { SessionOut } from "./client.ts";
import { startOfflineAgent } from "./node_agent_testing.ts";

const NOW = Date.UTC(2026, 11, 2, 3, 0, 0);
const ACKED = bcd.v1.CommandUpdate.State.ACKED;

/** A gateway frame as the session hands it over (decoded from the wire). */
function frame(f: Props<typeof bcd.v1.GatewayFrame>): GatewayFrame {
  return decodeGatewayFrame(encodeGatewayFrame(f));
}

function command(id: string): Props<typeof bcd.v1.Command> {
  return {
    body: encodeMessage(bcd.v1.CommandBody, {
      id,
      node_id: "n-1",
      kind: "inventory.refresh",
      lane: "control",
      payload: packPayload("inventory.refresh", {}),
      not_after: { seconds: Math.floor(NOW / 1000) + 600, nanos: 0 },
      retry_safe: true,
    }),
    attempt: 1,
  };
}

// Issue 24: the session waited for each command's delivery (which resolves once its `accepted` is durable) before it
// read the next frame, so on the session's path every `accepted` had a WAL sync of its own.
Deno.test("a Command frame is taken while the one before it is in acceptance; any other frame waits for them", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-agent-commands-test-" });
  const clock = new FakeClock(NOW);
  const journal = await Journal.open({ dataDir: dir, bootId: "boot-1", nodeId: "n-1", clock });
  const handler = new FakeHandler("inventory.refresh", { gated: true });
  const { logger, lines } = memoryLogger("debug");
  try {
    const agent = await startOfflineAgent(journal, {
      handlers: new HandlerRegistry().register(handler),
      log: logger,
      clock,
    });
    try {
      const sent: Props<typeof bcd.v1.CommandUpdate>[] = [];
      const out: SessionOut = {
        epoch: 1,
        send: (f) => {
          if (f.command_update) sent.push(f.command_update);
          return true;
        },
      };
      await agent.established(out);
      const commitsBefore = journal.stats.commits;
      await agent.frame(frame({ command: command("01CMD-A") }), out);
      await agent.frame(frame({ command: command("01CMD-B") }), out);
      assert.deepEqual(sent.filter((u) => u.state === ACKED), [], "both taken before either accepted is durable");
      await agent.frame(frame({ ack: { command_ids: [] } }), out);
      assert.deepEqual(
        sent.filter((u) => u.state === ACKED).map((u) => u.command_id),
        ["01CMD-A", "01CMD-B"],
        "the Ack frame was handled only once both commands were answered, in delivery order",
      );
      assert.equal(journal.stats.commits - commitsBefore, 1, "both accepted in one group commit");
      for (const id of ["01CMD-A", "01CMD-B"]) {
        while (!handler.runs.includes(id)) await new Promise((r) => setTimeout(r, 1));
        handler.open(id);
      }
      await agent.dispatcher.settled();
      const updates = lines.filter((l) => l.msg === "command update");
      assert.deepEqual(
        updates.map((l) => `${l.state}:${l.level}`),
        ["ACKED:debug", "ACKED:debug", "RUNNING:debug", "RUNNING:debug", "SUCCEEDED:info", "SUCCEEDED:info"],
        "one info line per command (its result); ACKED and RUNNING at debug",
      );
    } finally {
      handler.releaseAll();
      await agent.stop();
    }
  } finally {
    await journal.close();
    await Deno.remove(dir, { recursive: true });
  }
});
