/**
 * Agent configuration: `config.toml` parsed, checked key by key and resolved with defaults.
 *
 * @module
 */
export {
  type AgentConfig,
  ConfigError,
  JOURNAL_DEFAULT_MAX_BYTES,
  JOURNAL_DEFAULT_MAX_UNACKED_EVENTS,
  loadAgentConfig,
  type LogLevel,
  parseAgentConfig,
  resolveAgentConfig,
  type ResolvedAgentConfig,
} from "./agent_config.ts";
