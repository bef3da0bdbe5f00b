/**
 * Test support: a minimal ELF64 relocatable object with a `.modinfo` section, as `modinfoFields` reads a kernel module,
 * and a module tree of such files.
 *
 * @module
 */

/** An ELF64 little-endian file whose `.modinfo` holds `fields` (`key=value`, NUL-separated). */
export function fakeModule(fields: readonly string[]): Uint8Array {
  const enc = new TextEncoder();
  const shstr = enc.encode("\0.shstrtab\0.modinfo\0");
  const info = enc.encode(fields.map((f) => f + "\0").join(""));
  const shoff = 64 + shstr.length + info.length;
  const out = new Uint8Array(shoff + 3 * 64);
  const v = new DataView(out.buffer);
  out.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1], 0);
  v.setUint16(0x10, 1, true); // ET_REL
  v.setUint16(0x12, 62, true); // x86-64
  v.setBigUint64(0x28, BigInt(shoff), true);
  v.setUint16(0x34, 64, true);
  v.setUint16(0x3a, 64, true);
  v.setUint16(0x3c, 3, true);
  v.setUint16(0x3e, 1, true);
  out.set(shstr, 64);
  out.set(info, 64 + shstr.length);
  const sh = (i: number, name: number, off: number, size: number) => {
    const o = shoff + i * 64;
    v.setUint32(o, name, true);
    v.setUint32(o + 4, i === 1 ? 3 : 1, true);
    v.setBigUint64(o + 0x18, BigInt(off), true);
    v.setBigUint64(o + 0x20, BigInt(size), true);
  };
  sh(1, 1, 64, shstr.length);
  sh(2, 11, 64 + shstr.length, info.length);
  return out;
}

/**
 * Writes `lib/modules/<version>`-like tree under `dir`: each module (path under `kernel/` → its dependencies) as a
 * fake module, and `modules.builtin` listing `builtin` (as `kernel/<path>.ko` lines).
 */
export async function writeModuleTree(
  dir: string,
  modules: Readonly<Record<string, readonly string[]>>,
  builtin: readonly string[] = [],
): Promise<void> {
  for (const [path, deps] of Object.entries(modules)) {
    const file = `${dir}/kernel/${path}`;
    await Deno.mkdir(file.slice(0, file.lastIndexOf("/")), { recursive: true });
    await Deno.writeFile(file, fakeModule([`depends=${deps.join(",")}`, "license=GPL"]));
  }
  await Deno.writeTextFile(`${dir}/modules.builtin`, builtin.map((b) => `kernel/${b}.ko\n`).join(""));
}
