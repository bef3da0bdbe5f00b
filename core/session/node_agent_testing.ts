/**
 * An offline {@link NodeAgent} for tests: node `n-1` with a fresh signing key, no certificate chain, an empty trust
 * bundle and no gateway, the default agent config, no handlers and a silent logger, each replaceable.
 *
 * @module
 */
import { HandlerRegistry } from "../commands/handlers.ts";
import { loadAgentConfig } from "../config/mod.ts";
import type { Journal } from "../journal/mod.ts";
import { silentLogger } from "../log/mod.ts";
import { generateSigningKeyPair } from "../pki/ed25519.ts";
import { NodeAgent, type NodeAgentOptions } from "./node_agent.ts";

/** Starts the agent over `journal`; `more` replaces any default. */
export async function startOfflineAgent(journal: Journal, more: Partial<NodeAgentOptions> = {}): Promise<NodeAgent> {
  return await NodeAgent.start({
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
    ...more,
  });
}
