/**
 * The kernel's mount table, `/proc/self/mountinfo`, parsed: a pure function over the file's text, at the bottom of
 * the guest so that the probes (`guest/linux_probes.ts`) and the mapping layer (`guest/mapping/linux_fs.ts`) both
 * read it without importing each other.
 *
 * @module
 */

/** One line of /proc/self/mountinfo. */
export interface MountEntry {
  readonly mountPoint: string;
  readonly options: string;
  readonly type: string;
  readonly source: string;
  readonly superOptions: string;
}

/** Undoes the kernel's octal escapes (`\040` for a space, `\011`, `\012`, `\134`). */
export function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
}

/** Parses /proc/self/mountinfo; refuses a line without the ` - ` separator. */
export function parseMountInfo(text: string): MountEntry[] {
  const out: MountEntry[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const sep = line.indexOf(" - ");
    if (sep < 0) throw new SyntaxError(`mountinfo line without " - ": ${JSON.stringify(line)}`);
    const a = line.slice(0, sep).split(" ");
    const b = line.slice(sep + 3).split(" ");
    if (a.length < 6 || b.length < 3) throw new SyntaxError(`short mountinfo line: ${JSON.stringify(line)}`);
    out.push({
      mountPoint: unescapeMount(a[4]!),
      options: a[5]!,
      type: b[0]!,
      source: unescapeMount(b[1]!),
      superOptions: b[2]!,
    });
  }
  return out;
}
