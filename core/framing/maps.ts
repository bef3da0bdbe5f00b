/**
 * The host's mapping table in parts (seed 002 §Ready, mapping tables, and Start): a Maps body is a MAPS payload:
 * the index of the part's first mapping and the number of its mappings, each a little-endian u32, then each
 * mapping: flags (u16, 1 read-only, 0 otherwise), the lengths of source and target (u16 each), the source (a
 * path relative to the guest's mount of the host's export) and the target (an absolute path in the root), as
 * bytes. And MapFailed: how many mappings were applied (u32), then the problem.
 *
 * @module
 */
import { BodyError } from "./errors.ts";
import { BodyReader, BodyWriter, encodeUtf8, utf8 } from "./_bytes.ts";
import { MAX_DATA_BODY } from "./frame_kinds.ts";
import { MAX_MAPPINGS } from "./root_config.ts";

/** One mapping of the table. */
export interface Mapping {
  readonly readOnly: boolean;
  /** The source, relative to the export's mount, as bytes. */
  readonly source: Uint8Array;
  /** The target, absolute in the root, as bytes. */
  readonly target: Uint8Array;
}

/** A part of the table: the index of its first mapping, and its mappings. */
export interface MapsPart {
  readonly first: number;
  readonly mappings: readonly Mapping[];
}

/** MapFailed's body. */
export interface MapFailure {
  readonly applied: number;
  readonly problem: string;
}

const BODY = "maps";
const SLASH = 0x2f;

function pathProblem(p: Uint8Array, absolute: boolean): string | null {
  if (p.length === 0) return "is empty";
  if (p.includes(0)) return "holds a NUL";
  if ((p[0] === SLASH) !== absolute) return absolute ? "is not absolute" : "is not relative";
  const text = new TextDecoder("latin1").decode(p);
  const comps = (absolute ? text.slice(1) : text).split("/");
  if (absolute && text === "/") return "is /";
  for (const c of comps) if (c === "" || c === "." || c === "..") return "has an empty, . or .. component";
  return null;
}

function mappingProblem(m: Mapping): string | null {
  const s = pathProblem(m.source, false);
  if (s !== null) return `source ${s}`;
  const t = pathProblem(m.target, true);
  if (t !== null) return `target ${t}`;
  if (m.source.length > 0xffff || m.target.length > 0xffff) return "a path longer than 65,535 bytes";
  return null;
}

/** Decodes one part; refuses a part without a mapping or one that would end the table past 4,096 mappings. */
export function decodeMaps(body: Uint8Array): MapsPart {
  const r = new BodyReader(body, BODY);
  const first = r.u32("first");
  const count = r.u32("count");
  if (count === 0) throw new BodyError(BODY, "a part without a mapping");
  if (first + count > MAX_MAPPINGS) throw new BodyError(BODY, `the part ends the table past ${MAX_MAPPINGS} mappings`);
  if (count * 6 > r.left) throw new BodyError(BODY, `${count} mappings cannot fit ${r.left} bytes`);
  const mappings: Mapping[] = [];
  for (let i = 0; i < count; i++) {
    const flags = r.u16("flags");
    if (flags > 1) throw new BodyError(BODY, `mapping ${first + i} has flags ${flags}`);
    const sl = r.u16("source length");
    const tl = r.u16("target length");
    const m = { readOnly: flags === 1, source: r.take(sl, "source"), target: r.take(tl, "target") };
    const p = mappingProblem(m);
    if (p !== null) throw new BodyError(BODY, `mapping ${first + i}: ${p}`);
    mappings.push(m);
  }
  r.end();
  return { first, mappings };
}

/** Splits a table into parts of at most 256 KiB each; an empty table into none. */
export function encodeMaps(table: readonly Mapping[]): Uint8Array[] {
  if (table.length > MAX_MAPPINGS) throw new BodyError(BODY, `${table.length} mappings, beyond ${MAX_MAPPINGS}`);
  const parts: Uint8Array[] = [];
  let i = 0;
  while (i < table.length) {
    let size = 8;
    let j = i;
    while (j < table.length) {
      const m = table[j]!;
      const p = mappingProblem(m);
      if (p !== null) throw new BodyError(BODY, `mapping ${j}: ${p}`);
      const add = 6 + m.source.length + m.target.length;
      if (size + add > MAX_DATA_BODY) break;
      size += add;
      j++;
    }
    if (j === i) throw new BodyError(BODY, `mapping ${i} does not fit a part`);
    const w = new BodyWriter(size).u32(i).u32(j - i);
    for (const m of table.slice(i, j)) {
      w.u16(m.readOnly ? 1 : 0).u16(m.source.length).u16(m.target.length).bytesOf(m.source).bytesOf(m.target);
    }
    parts.push(w.done());
    i = j;
  }
  return parts;
}

/** Encodes MapFailed. */
export function encodeMapFailure(f: MapFailure): Uint8Array {
  const p = encodeUtf8(f.problem);
  return new BodyWriter(4 + p.length).u32(f.applied).bytesOf(p).done();
}

/** Decodes MapFailed. */
export function decodeMapFailure(body: Uint8Array): MapFailure {
  const r = new BodyReader(body, "map-failure");
  return { applied: r.u32("applied"), problem: utf8(r.rest(), "map-failure") };
}
