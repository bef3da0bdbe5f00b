/**
 * Test-only tar generator for hostile bundles: every header field is settable, including ones real `tar` would
 * never write (absolute names, `..`, device types, bad checksums, lying sizes). Not exported from mod.ts.
 *
 * @module
 */
import { gzipSync } from "node:zlib";

/** One raw member for {@link tarOf}. */
export interface RawMember {
  name: string;
  type?: string; // one char, default "0" (or "5" when the name ends with "/")
  content?: Uint8Array | string;
  /** Override the size field (octal digits written as-is) to lie about the data that follows. */
  sizeField?: string;
  /** Write a raw `prefix` field (ustar). */
  prefix?: string;
  linkname?: string;
  /** Add this to the checksum to corrupt it. */
  checksumDelta?: number;
  /** Raw bytes for the 512-byte header, patched after everything else (offset → bytes). */
  patch?: Record<number, number>;
}

const _enc = new TextEncoder();

function _field(h: Uint8Array, off: number, len: number, s: string): void {
  const b = _enc.encode(s);
  if (b.length > len) throw new RangeError(`field at ${off} too long: ${s}`);
  h.set(b, off);
}

function _octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, "0");
}

/** One 512-byte ustar header block with a correct checksum (unless `checksumDelta`). */
export function headerBlock(m: RawMember, size: number): Uint8Array {
  const h = new Uint8Array(512);
  _field(h, 0, 100, m.name);
  _field(h, 100, 8, _octal(m.type === "5" ? 0o755 : 0o644, 8));
  _field(h, 108, 8, _octal(0, 8));
  _field(h, 116, 8, _octal(0, 8));
  _field(h, 124, 12, m.sizeField ?? _octal(size, 12));
  _field(h, 136, 12, _octal(1_700_000_000, 12));
  const type = m.type ?? (m.name.endsWith("/") ? "5" : "0");
  h[156] = type.charCodeAt(0);
  if (m.linkname) _field(h, 157, 100, m.linkname);
  _field(h, 257, 6, "ustar");
  _field(h, 263, 2, "00");
  if (m.prefix) _field(h, 345, 155, m.prefix);
  for (const [k, v] of Object.entries(m.patch ?? {})) h[Number(k)] = v;
  for (let i = 148; i < 156; i++) h[i] = 0x20;
  let sum = 0;
  for (const c of h) sum += c;
  _field(h, 148, 8, _octal(sum + (m.checksumDelta ?? 0), 7) + "\0");
  return h;
}

/** A PAX record line `"%d key=value\n"`. */
export function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let len = body.length + 1;
  while (String(len).length + _enc.encode(body).length !== len) len++;
  return `${len}${body}`;
}

/** An uncompressed tar of `members`, ended by two zero blocks unless `end` is false. */
export function tarOf(members: RawMember[], opts: { end?: boolean } = {}): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const m of members) {
    const data = typeof m.content === "string" ? _enc.encode(m.content) : (m.content ?? new Uint8Array(0));
    parts.push(headerBlock(m, data.length));
    parts.push(data);
    const pad = (512 - (data.length % 512)) % 512;
    if (pad) parts.push(new Uint8Array(pad));
  }
  if (opts.end !== false) parts.push(new Uint8Array(1024));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** gzip of `data` (node:zlib). */
export function gz(data: Uint8Array): Uint8Array {
  return new Uint8Array(gzipSync(data, { level: 1 }));
}

/** A gzip-compressed tar of `members`. */
export function tgzOf(members: RawMember[], opts: { end?: boolean } = {}): Uint8Array {
  return gz(tarOf(members, opts));
}
