import assert from "node:assert/strict";
import { bcd, encodeMessage } from "../../proto/mod.ts";
import { HandlerRegistry } from "../commands/handlers.ts";
import { loadAgentConfig } from "../config/mod.ts";
import { Journal } from "../journal/mod.ts";
import { silentLogger } from "../log/mod.ts";
import { generateSigningKeyPair } from "../pki/ed25519.ts";
import { NodeAgent } from "./node_agent.ts";

Deno.test("the node reports a NodeSpec section it does not know as UNSUPPORTED with its field number, offline too", async () => {
  const dir = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "bcd-agent-spec-test-" });
  const journal = await Journal.open({ dataDir: dir, bootId: "boot-1", nodeId: "n-1" });
  try {
    const head = encodeMessage(bcd.v1.DesiredStateBody, { node_id: "n-1", generation: 7, spec_hash: "h7" });
    const spec = [0x4a, 0x02, 0x08, 0x01]; // NodeSpec field 9 (a section from a newer schema), not empty
    await journal.putSpec({ generation: 7, bytes: new Uint8Array([...head, 0x22, spec.length, ...spec]), hash: "h7" });
    const agent = await NodeAgent.start({
      role: "node",
      identity: {
        nodeId: "n-1",
        key: await generateSigningKeyPair(),
        certChain: [],
        trustBundle: new Uint8Array(),
        gatewayUrl: "",
      },
      journal,
      config: loadAgentConfig(""),
      handlers: new HandlerRegistry(),
      log: silentLogger(),
    });
    const s = agent.engine.snapshot();
    const nine = s.sections.find((x) => x.section === "9");
    assert.deepEqual([nine?.state, nine?.reason], ["UNSUPPORTED", "9"]);
    assert.equal(s.observed_generation, 7);
    assert.ok(s.conditions.some((c) => c.type === "SectionUnsupported" && c.subject === "9" && c.reason === "9"));
    await agent.stop();
  } finally {
    await journal.close();
    await Deno.remove(dir, { recursive: true });
  }
});
