/**
 * Reading /proc and /sys without tripping on what a kernel does not expose: a missing file, a file root cannot read,
 * or a sysfs attribute that answers EINVAL (a link's speed while it is down) reads as absent.
 *
 * @module
 */

/** Whether an error means "this attribute is not there to read". */
export function isAbsent(e: unknown): boolean {
  if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.PermissionDenied) return true;
  const code = (e as { code?: unknown })?.code;
  return code === "EINVAL" || code === "ENODEV" || code === "ENXIO" || code === "EOPNOTSUPP" || code === "ENOTDIR";
}

/** The file's text, trimmed, or undefined when it is absent. */
export async function readAttr(path: string): Promise<string | undefined> {
  try {
    return (await Deno.readTextFile(path)).trim();
  } catch (e) {
    if (isAbsent(e)) return undefined;
    throw e;
  }
}

/** A numeric attribute, or undefined. */
export async function readInt(path: string): Promise<number | undefined> {
  const s = await readAttr(path);
  if (s === undefined || !/^-?\d+$/.test(s)) return undefined;
  return Number(s);
}

/** The entries of a directory, sorted; empty when it is absent. */
export async function listDir(path: string): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(path)) out.push(e.name);
  } catch (e) {
    if (isAbsent(e)) return [];
    throw e;
  }
  return out.sort(compareNatural);
}

function _isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/**
 * The printable ASCII characters in the order of ICU's root collation (what `localeCompare(…, "en")` uses): space and
 * punctuation, symbols, digits, then each letter, its lowercase and uppercase forms equal but for case.
 */
const ICU_ASCII_ORDER = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz";

/** Each ASCII code unit's rank in {@link ICU_ASCII_ORDER} (an uppercase letter its lowercase form's), else -1. */
const _RANK = (() => {
  const rank = new Int16Array(128).fill(-1);
  for (let i = 0; i < ICU_ASCII_ORDER.length; i++) rank[ICU_ASCII_ORDER.charCodeAt(i)] = i;
  for (let c = 65; c <= 90; c++) rank[c] = rank[c + 32]!;
  return rank;
})();

/** A code unit's primary weight: its ICU rank for printable ASCII, after every ASCII one for anything else. */
function _weight(c: number): number {
  const r = c < 128 ? _RANK[c]! : -1;
  return r >= 0 ? r : 128 + c;
}

/** The end of the run of digits that starts at `i`. */
function _digitsEnd(s: string, i: number): number {
  while (i < s.length && _isDigit(s.charCodeAt(i))) i++;
  return i;
}

/**
 * The order of names with numbers in them, as `localeCompare(b, "en", { numeric: true })` gives it for ASCII names,
 * without ICU (its collator's first use in a process cost ~8 ms of CPU and ~3.7 MiB of RSS: issue 24): runs of
 * digits compare by value (leading zeros ignored: `x07` and `x7` are equal), other characters by ICU's root order of
 * printable ASCII (punctuation, then digits, then letters, case aside), a name that is a prefix of another first; where
 * all of that is equal, the first letter whose case differs puts the lowercase one first (`aB` before `Ab`). Beyond
 * printable ASCII it orders by code unit after ASCII, where ICU would weigh accents and scripts: sysfs names are ASCII.
 */
export function compareNatural(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(j);
    if (_isDigit(ca) && _isDigit(cb)) {
      const ei = _digitsEnd(a, i);
      const ej = _digitsEnd(b, j);
      let si = i;
      let sj = j;
      while (si < ei && a.charCodeAt(si) === 48) si++;
      while (sj < ej && b.charCodeAt(sj) === 48) sj++;
      // Leading zeros aside, the longer run is the larger number; of equal length, the first differing digit says.
      if (ei - si !== ej - sj) return (ei - si) - (ej - sj);
      for (let k = 0; k < ei - si; k++) {
        const d = a.charCodeAt(si + k) - b.charCodeAt(sj + k);
        if (d !== 0) return d;
      }
      i = ei;
      j = ej;
      continue;
    }
    const d = _weight(ca) - _weight(cb);
    if (d !== 0) return d;
    i++;
    j++;
  }
  if (i < a.length || j < b.length) return (a.length - i) - (b.length - j);
  // Equal but for case (and leading zeros): the first letter, in order, whose case differs.
  i = 0;
  j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(j);
    if (_isDigit(ca) && _isDigit(cb)) {
      i = _digitsEnd(a, i);
      j = _digitsEnd(b, j);
      continue;
    }
    if (ca !== cb) return ca > cb ? -1 : 1; // the same letter (the first pass): lowercase has the higher code unit
    i++;
    j++;
  }
  return 0;
}

/** The resolved path, or undefined. */
export async function realPath(path: string): Promise<string | undefined> {
  try {
    return await Deno.realPath(path);
  } catch (e) {
    if (isAbsent(e)) return undefined;
    throw e;
  }
}

/** The last PCI address (`0000:18:00.0`) on a resolved sysfs device path, or "". */
export function pciBusIdOf(resolved: string | undefined): string {
  if (resolved === undefined) return "";
  const parts = resolved.split("/").filter((p) => /^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/i.test(p));
  return parts.at(-1) ?? "";
}
