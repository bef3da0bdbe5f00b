/**
 * NodeSpec sections, their convergence order and the status a section reports (000 §NodeSpec and its sections,
 * §Convergence and status).
 *
 * @module
 */

/** The sections in the order the daemon converges them. */
export const SECTION_ORDER = ["host", "devices", "instances", "access", "telemetry", "daemon", "site"] as const;

/** A NodeSpec section. */
export type SectionName = typeof SECTION_ORDER[number];

/**
 * The NodeSpec field number of each section, the reason an `UNSUPPORTED` section's `SectionUnsupported` condition
 * carries. They match `proto/bcd/v1` NodeSpec field numbers.
 */
export const SECTION_FIELD_NUMBER: Readonly<Record<SectionName, number>> = {
  host: 1,
  devices: 2,
  instances: 3,
  access: 4,
  telemetry: 5,
  daemon: 6,
  site: 7,
};

/** A section's state in a status report. */
export type SectionState = "CONVERGED" | "PROGRESSING" | "FAILED" | "UNSUPPORTED";

/**
 * A NodeSpec field number this build does not know, as a section status names it: the number in decimal (it has no
 * name here; the number is what the seed's `SectionUnsupported` reason carries).
 */
export type UnknownSectionName = `${number}`;

/** One `SectionStatus` of a `StatusReport`. */
export interface SectionStatus {
  readonly section: SectionName | UnknownSectionName;
  readonly state: SectionState;
  /** The spec generation this status is about. */
  readonly generation: number;
  readonly reason: string;
  readonly message: string;
}

/** Whether a state lets `observed_generation` advance: converged, failed terminally, or unsupported. */
export function isTerminal(state: SectionState): boolean {
  return state !== "PROGRESSING";
}

/**
 * Whether a section value is empty: absent, or holding only empty values (no field set, empty lists, zero values).
 * A section with no converger is trivially converged when empty and `UNSUPPORTED` otherwise.
 */
export function isEmptySection(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof value === "string") return value === "";
  if (typeof value === "number" || typeof value === "bigint") return value == 0;
  if (typeof value === "boolean") return value === false;
  if (value instanceof Uint8Array) return value.length === 0;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === "object") return Object.values(value as Record<string, unknown>).every(isEmptySection);
  return false;
}
