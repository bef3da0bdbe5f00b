/**
 * Strings from the wire cut to a bound before they are logged, journaled or echoed, so a peer cannot make the node
 * write megabytes per line.
 *
 * @module
 */

/** The most bytes of a peer's string a log line carries. */
export const MAX_LOGGED_STRING_BYTES = 512;

/** `s` cut to at most `maxBytes` of UTF-8, never inside a character. */
export function boundedString(s: string, maxBytes: number): string {
  const enc = new TextEncoder();
  if (s.length <= maxBytes / 3 || enc.encode(s).length <= maxBytes) return s;
  let out = "";
  let used = 0;
  for (const ch of s) {
    const n = enc.encode(ch).length;
    if (used + n > maxBytes) break;
    out += ch;
    used += n;
  }
  return out;
}

/** `s` bounded for a log line: cut to {@link MAX_LOGGED_STRING_BYTES}, saying how long it was when cut. */
export function forLog(s: string): string {
  const cut = boundedString(s, MAX_LOGGED_STRING_BYTES);
  return cut.length === s.length ? s : `${cut}… (${s.length} characters)`;
}
