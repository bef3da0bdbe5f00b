/**
 * The config-install kinds (seed 004 §(b), added to the seed 002 table from kind 32): AgentConfigVersion (the
 * bundle's version, first), AgentConfigChunk (gzip-tar bytes in order, at most 512 KiB each), AgentConfigEnd (the
 * end of the stream), and the guest's AgentConfigResult: a status code, one byte, then the problem as UTF-8.
 *
 * @module
 */
import { BodyError } from "./errors.ts";
import { BodyReader, BodyWriter, encodeUtf8, utf8 } from "./_bytes.ts";

/** The seed's result codes, numbered as the gRPC codes they name. */
export const INSTALL_CODES = {
  "ok": 0,
  "invalid-argument": 3,
  "resource-exhausted": 8,
  "failed-precondition": 9,
  "unimplemented": 12,
  "internal": 13,
} as const;

/** A result code's name. */
export type InstallCode = keyof typeof INSTALL_CODES;

/** The guest's answer to an install. */
export interface InstallResult {
  readonly code: InstallCode;
  readonly problem: string;
}

/** The name that `current` reserves; no version may take it. */
export const RESERVED_VERSION = "current";

/**
 * Checks a version: non-empty `^[A-Za-z0-9_-]+$` other than `current`, or "" (which installs no tree). Returns
 * the problem or null.
 */
export function versionProblem(v: string): string | null {
  if (v === "") return null;
  if (!/^[A-Za-z0-9_-]+$/.test(v)) return `version ${JSON.stringify(v)} is not [A-Za-z0-9_-]+`;
  if (v === RESERVED_VERSION) return "version current is reserved";
  return null;
}

/** Encodes the version frame's body. */
export function encodeVersion(v: string): Uint8Array {
  return encodeUtf8(v);
}

/** Decodes the version frame's body (its grammar is the guest's to check, so it answers with a code). */
export function decodeVersion(body: Uint8Array): string {
  return utf8(body, "agent-config-version");
}

/** Encodes a result. */
export function encodeInstallResult(r: InstallResult): Uint8Array {
  const p = encodeUtf8(r.problem);
  return new BodyWriter(1 + p.length).u8(INSTALL_CODES[r.code]).bytesOf(p).done();
}

/** Decodes a result; refuses an unknown code. */
export function decodeInstallResult(body: Uint8Array): InstallResult {
  const r = new BodyReader(body, "agent-config-result");
  const n = r.u8("code");
  const code = (Object.keys(INSTALL_CODES) as InstallCode[]).find((k) => INSTALL_CODES[k] === n);
  if (code === undefined) throw new BodyError("agent-config-result", `code ${n} is not a result code`);
  return { code, problem: utf8(r.rest(), "agent-config-result") };
}
