/**
 * The agent's version and the protocol versions it speaks, as `version` prints them.
 *
 * @module
 */

/** The agent release. */
export const AGENT_VERSION = "0.1.0";

/** The build: `"source"` when run from the tree; `make bundle` / `make compile` replace the marker with the commit. */
export const BUILD: string = "__BCD_BUILD__".startsWith("__") ? "source" : "__BCD_BUILD__";

/** Protocol versions by protocol. */
export const PROTOCOLS: Readonly<Record<string, number>> = {
  /** The node↔gateway session (proto/bcd/session.proto). */
  session: 1,
  /** Host↔guest control framing (seed 002). */
  framing: 1,
  /** Guest turn/drain protocol (seed 001). */
  turns: 1,
  /** Config bundle install into guests (seed 004). */
  agent_config: 1,
  /** Node↔root helper over a unix socket (000 §privilege separation; `core/helper`'s HELPER_PROTOCOL_VERSION). */
  helper: 1,
};
