/**
 * The kernel modules an initramfs needs, with their dependencies, read from an unpacked kernel's module tree. A tree
 * unpacked with `dpkg -x` has no `modules.dep` (depmod never ran on it), so each module's dependencies come from its
 * own ELF `.modinfo` section (`depends=a,b`), which is what depmod reads too. A wanted module the kernel builds in
 * (`modules.builtin`) needs no file; one the kernel lacks altogether is reported, not silently dropped.
 *
 * @module
 */

/** The largest module file read (the biggest Debian modules are a few MiB). */
export const MAX_MODULE_BYTES = 64 * 1024 * 1024;

/** A module file that is not an ELF64 little-endian object with a `.modinfo` section within its bounds. */
export class ModuleFormatError extends Error {
  override name = "ModuleFormatError";
}

/** `key=value` pairs of a module's `.modinfo` section, in order (a key may repeat: `alias`, `firmware`). */
export function modinfoFields(elf: Uint8Array, what = "module"): [string, string][] {
  if (elf.length > MAX_MODULE_BYTES) {
    throw new ModuleFormatError(`${what} is ${elf.length} bytes (at most ${MAX_MODULE_BYTES})`);
  }
  if (elf.length < 64 || elf[0] !== 0x7f || elf[1] !== 0x45 || elf[2] !== 0x4c || elf[3] !== 0x46) {
    throw new ModuleFormatError(`${what} is not an ELF file`);
  }
  if (elf[4] !== 2 || elf[5] !== 1) throw new ModuleFormatError(`${what} is not ELF64 little-endian`);
  const v = new DataView(elf.buffer, elf.byteOffset, elf.byteLength);
  const shoff = Number(v.getBigUint64(0x28, true));
  const shentsize = v.getUint16(0x3a, true);
  const shnum = v.getUint16(0x3c, true);
  const shstrndx = v.getUint16(0x3e, true);
  if (shentsize < 64 || shstrndx >= shnum || shoff + shnum * shentsize > elf.length) {
    throw new ModuleFormatError(`${what}: section headers outside the file`);
  }
  const section = (i: number) => {
    const o = shoff + i * shentsize;
    const off = Number(v.getBigUint64(o + 0x18, true));
    const size = Number(v.getBigUint64(o + 0x20, true));
    if (off + size > elf.length) throw new ModuleFormatError(`${what}: section ${i} outside the file`);
    return { name: v.getUint32(o, true), off, size };
  };
  const names = section(shstrndx);
  const dec = new TextDecoder();
  for (let i = 0; i < shnum; i++) {
    const s = section(i);
    if (s.name >= names.size) continue;
    const start = names.off + s.name;
    const end = elf.indexOf(0, start);
    if (end < 0 || end > names.off + names.size) continue;
    if (dec.decode(elf.subarray(start, end)) !== ".modinfo") continue;
    return dec.decode(elf.subarray(s.off, s.off + s.size)).split("\0").filter((f) => f.includes("=")).map((f) => {
      const eq = f.indexOf("=");
      return [f.slice(0, eq), f.slice(eq + 1)];
    });
  }
  throw new ModuleFormatError(`${what} has no .modinfo section`);
}

/** A module's name as the kernel spells it (`nvme-core.ko` → `nvme_core`). */
export function moduleName(file: string): string {
  return file.slice(file.lastIndexOf("/") + 1).replace(/\.ko$/, "").replaceAll("-", "_");
}

/** The modules `depends=` names (normalised with {@link moduleName}). */
export function moduleDepends(elf: Uint8Array, what?: string): string[] {
  const dep = modinfoFields(elf, what).find(([k]) => k === "depends")?.[1] ?? "";
  return dep.split(",").filter((d) => d !== "").map(moduleName);
}

/** What {@link resolveModules} found. */
export interface ResolvedModules {
  /** Module files to load, every dependency before its dependents: name and absolute path. */
  readonly load: readonly { readonly name: string; readonly path: string }[];
  /** Wanted modules the kernel has built in (nothing to load). */
  readonly builtin: readonly string[];
  /** Wanted modules this kernel has neither as a file nor built in. */
  readonly absent: readonly string[];
}

async function _walk(dir: string, out: Map<string, string>): Promise<void> {
  for await (const e of Deno.readDir(dir)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) await _walk(p, out);
    else if (e.isFile && e.name.endsWith(".ko")) out.set(moduleName(e.name), p);
    else if (e.isFile && /\.ko\.(xz|zst|gz)$/.test(e.name)) {
      throw new ModuleFormatError(`${p} is compressed; this builder takes plain .ko files (Debian 12's)`);
    }
  }
}

async function _builtin(modulesDir: string): Promise<Set<string>> {
  try {
    return new Set(
      (await Deno.readTextFile(`${modulesDir}/modules.builtin`)).split("\n").filter(Boolean).map(moduleName),
    );
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return new Set();
    throw e;
  }
}

/**
 * The modules `wanted` needs from the tree at `modulesDir` (`lib/modules/<version>`), dependencies first. A dependency
 * that is neither a file nor built in is an error (the module could not load); a wanted module that is absent is
 * listed in `absent`.
 */
export async function resolveModules(modulesDir: string, wanted: readonly string[]): Promise<ResolvedModules> {
  const files = new Map<string, string>();
  await _walk(`${modulesDir}/kernel`, files);
  const builtin = await _builtin(modulesDir);
  const load: { name: string; path: string }[] = [];
  const done = new Set<string>();
  const visit = async (name: string, chain: readonly string[]): Promise<void> => {
    if (done.has(name) || builtin.has(name)) return;
    if (chain.includes(name)) throw new ModuleFormatError(`module dependency cycle: ${[...chain, name].join(" -> ")}`);
    const path = files.get(name);
    if (path === undefined) {
      throw new ModuleFormatError(
        `${chain.at(-1)} depends on ${name}, which this kernel has neither as a file nor built in`,
      );
    }
    for (const d of moduleDepends(await Deno.readFile(path), path)) await visit(d, [...chain, name]);
    done.add(name);
    load.push({ name, path });
  };
  const inBuilt: string[] = [];
  const absent: string[] = [];
  for (const w of wanted.map(moduleName)) {
    if (builtin.has(w)) inBuilt.push(w);
    else if (!files.has(w)) absent.push(w);
    else await visit(w, []);
  }
  return { load, builtin: inBuilt, absent };
}
