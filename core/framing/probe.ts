/**
 * Probes and their facts (seed 002 §Probes). A probe is UTF-8 text: its name (a lowercase ASCII letter, then
 * lowercase letters, digits and `-`), then each argument after one space, without whitespace or control
 * characters. Facts are KEY=VALUE lines in the order found, each key at most once; a key holds lowercase
 * letters, digits, `.` and `-`; a value escapes `\`, newline and carriage return as `\\`, `\n`, `\r`.
 *
 * @module
 */
import { BodyError } from "./errors.ts";
import { encodeUtf8, utf8 } from "./_bytes.ts";

/** A probe: its name and arguments. */
export interface Probe {
  readonly name: string;
  readonly args: readonly string[];
}

/** The facts a probe found, in order. */
export type Facts = ReadonlyArray<readonly [key: string, value: string]>;

const NAME = /^[a-z][a-z0-9-]*$/;
const KEY = /^[a-z0-9.-]+$/;
const BAD_ARG = /[\s\p{Cc}]/u;

function probeProblem(p: Probe): string | null {
  if (!NAME.test(p.name)) return `name ${JSON.stringify(p.name)} is not a probe name`;
  for (const a of p.args) {
    if (a.length === 0) return "an argument is empty";
    if (BAD_ARG.test(a)) return `argument ${JSON.stringify(a)} holds whitespace or a control character`;
  }
  return null;
}

/** Encodes a probe as its text. */
export function encodeProbe(p: Probe): Uint8Array {
  const problem = probeProblem(p);
  if (problem !== null) throw new BodyError("probe", problem);
  return encodeUtf8([p.name, ...p.args].join(" "));
}

/** Decodes a probe; refuses a bad name, an empty argument (two spaces) or a bad character. */
export function decodeProbe(body: Uint8Array): Probe {
  const parts = utf8(body, "probe").split(" ");
  const p = { name: parts[0]!, args: parts.slice(1) };
  const problem = probeProblem(p);
  if (problem !== null) throw new BodyError("probe", problem);
  return p;
}

/** Escapes a fact's value. */
export function escapeValue(v: string): string {
  return v.replaceAll("\\", "\\\\").replaceAll("\n", "\\n").replaceAll("\r", "\\r");
}

/** Reverses {@link escapeValue}; refuses an unknown escape or a raw carriage return. */
export function unescapeValue(v: string, body = "facts"): string {
  if (v.includes("\r")) throw new BodyError(body, "a value holds a raw carriage return");
  return v.replace(/\\(.?)/gs, (_m, c: string) => {
    if (c === "\\") return "\\";
    if (c === "n") return "\n";
    if (c === "r") return "\r";
    throw new BodyError(body, `unknown escape \\${c}`);
  });
}

/** Encodes facts as KEY=VALUE lines. */
export function encodeFacts(facts: Facts): Uint8Array {
  const seen = new Set<string>();
  let text = "";
  for (const [k, v] of facts) {
    if (!KEY.test(k)) throw new BodyError("facts", `key ${JSON.stringify(k)} is not a fact key`);
    if (seen.has(k)) throw new BodyError("facts", `key ${k} appears twice`);
    seen.add(k);
    text += `${k}=${escapeValue(v)}\n`;
  }
  return encodeUtf8(text);
}

/** Decodes facts, keeping their order. */
export function decodeFacts(body: Uint8Array): Facts {
  const text = utf8(body, "facts");
  if (text.length > 0 && !text.endsWith("\n")) throw new BodyError("facts", "the last line has no newline");
  const out: [string, string][] = [];
  const seen = new Set<string>();
  for (const line of text.split("\n").slice(0, -1)) {
    const eq = line.indexOf("=");
    if (eq < 0) throw new BodyError("facts", `line without =: ${JSON.stringify(line)}`);
    const k = line.slice(0, eq);
    if (!KEY.test(k)) throw new BodyError("facts", `key ${JSON.stringify(k)} is not a fact key`);
    if (seen.has(k)) throw new BodyError("facts", `key ${k} appears twice`);
    seen.add(k);
    out.push([k, unescapeValue(line.slice(eq + 1))]);
  }
  return out;
}

/** Encodes a problem (ProbeFailed, MapFailed's tail) as UTF-8. */
export function encodeProblem(problem: string): Uint8Array {
  return encodeUtf8(problem);
}

/** Decodes a ProbeFailed body. */
export function decodeProblem(body: Uint8Array): string {
  return utf8(body, "problem");
}
