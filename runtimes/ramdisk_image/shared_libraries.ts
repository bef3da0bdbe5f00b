/**
 * The shared libraries a dynamic executable loads, as `ldd` names them: what an initramfs must carry beside Deno and
 * `kexec` (a static busybox needs none).
 *
 * @module
 */

/** `ldd` failed on the binary (not an executable, or a library is missing on this host). */
export class LddFailed extends Error {
  override name = "LddFailed";
}

/** The absolute paths in `ldd`'s output (`lib => /path (addr)` and the bare dynamic loader line), in its order. */
export function parseLdd(text: string): string[] {
  const libs: string[] = [];
  for (const line of text.split("\n")) {
    if (/=>\s*not found/.test(line)) throw new LddFailed(`ldd: ${line.trim()}`);
    const m = /=>\s*(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line);
    if (m) libs.push(m[1]!);
  }
  return libs;
}

/** The absolute paths of `ldd BINARY`'s libraries (the dynamic loader included); none for a static binary. */
export async function sharedLibraries(binary: string): Promise<string[]> {
  const out = await new Deno.Command("ldd", { args: [binary], stdout: "piped", stderr: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    if (/not a dynamic executable/.test(text + new TextDecoder().decode(out.stderr))) return [];
    throw new LddFailed(`ldd ${binary} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return parseLdd(text);
}
