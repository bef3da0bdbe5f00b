import assert from "node:assert/strict";
import { loadAgentConfig } from "../core/config/mod.ts";
import { TestbedGateway } from "../fixtures/testbed/gateway.ts";
import { joinFleet, SimFleet } from "./sim_fleet.ts";

const QUIET = { write: (_: string) => {} };

Deno.test({
  name: "a fleet runs its nodes in one process, each its own; a killed node comes back as a new process would",
  // The gateway's server keeps connections of the killed node until they time out on its side.
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const gw = await TestbedGateway.start({ heartbeatIntervalMs: 300 });
    const dir = await Deno.makeTempDir({ prefix: "bcd-fleet-test-" });
    let fleet: SimFleet | undefined;
    try {
      const ids = await joinFleet(dir, [gw.ca.issueToken("node"), gw.ca.issueToken("node")], gw.joinUrl);
      assert.equal(new Set(ids).size, 2, "two identities");
      fleet = await SimFleet.open({
        dataDir: dir,
        nodes: 2,
        config: loadAgentConfig(""),
        gatewayUrl: gw.sessionUrl,
        logLevel: "error",
        destination: QUIET,
      });
      const [a, b] = fleet.nodes as [NonNullable<typeof fleet.nodes[0]>, NonNullable<typeof fleet.nodes[0]>];
      await a.start();
      await b.start();
      const established = () => fleet!.nodes.every((n) => n.agent?.session?.phase === "established");
      await gw.until(established, "both sessions");
      assert.notEqual(a.agent!.journal.journalId, b.agent!.journal.journalId, "each node its own journal");
      assert.notEqual(await a.bootId(), await b.bootId(), "each node its own boot");
      const before = {
        journal: a.agent!.journal.journalId,
        incarnation: a.incarnation!,
        epoch: gw.nodes.get(a.nodeId)!.epoch,
      };
      await a.kill();
      assert.equal(a.agent, undefined, "the killed start's state is dropped");
      assert.equal(a.alive(before.incarnation), false);
      assert.equal(b.agent?.session?.phase, "established", "the other node runs on");
      await a.start();
      await gw.until(
        () => (gw.nodes.get(a.nodeId)?.epoch ?? 0) > before.epoch && gw.nodes.get(a.nodeId)?.session,
        "a new session",
      );
      assert.equal(a.agent!.journal.journalId, before.journal, "the same journal, reopened");
      assert.notEqual(a.incarnation, before.incarnation, "a new incarnation");
      assert.equal(gw.nodes.get(a.nodeId)!.lastHello?.incarnation_id, a.incarnation);
      assert.equal(a.starts, 2);
    } finally {
      await fleet?.stop();
      await gw.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
