/**
 * The agent's version and the protocol versions it speaks, as `version` prints them.
 *
 * @module
 */

/**
 * The agent release: `0.1.0` from the tree; a release build (`bundleRole(…, { version })`, the self-update's
 * artifacts) replaces the marker with its version, which `Hello` reports and the self-update confirms.
 */
export const AGENT_VERSION: string = "__BCD_VERSION__".startsWith("__") ? "0.1.0" : "__BCD_VERSION__";

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
