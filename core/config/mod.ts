/**
 * Agent configuration: `config.toml` parsed, checked key by key and resolved with defaults.
 *
 * @module
 */
export {
  type AgentConfig,
  ConfigError,
  loadAgentConfig,
  parseAgentConfig,
  resolveAgentConfig,
  type ResolvedAgentConfig,
} from "./agent_config.ts";
