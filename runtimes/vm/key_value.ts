/**
 * The host commands' output: `KEY=VALUE` lines whose values escape `\`, newlines and carriage returns as `\\`, `\n`
 * and `\r` (seed 002 §Commands).
 *
 * @module
 */

/** One output line's pair. */
export type KeyValue = readonly [key: string, value: string];

/** Escapes a value. */
export function escapeOutputValue(v: string): string {
  return v.replaceAll("\\", "\\\\").replaceAll("\n", "\\n").replaceAll("\r", "\\r");
}

/** The lines of `pairs`, each ended by a newline. */
export function formatKeyValues(pairs: readonly KeyValue[]): string {
  return pairs.map(([k, v]) => `${k}=${escapeOutputValue(v)}\n`).join("");
}

/** A command's result: its exit status and what it found. */
export interface HostResult {
  readonly code: number;
  readonly out: KeyValue[];
  /** The diagnostic on standard error when it failed. */
  readonly problem?: string;
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_MISMATCHED = 3;
export const EXIT_ROOT_FAILED = 4;
