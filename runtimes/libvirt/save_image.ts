/**
 * The header of libvirt's QEMU save image (what `virsh save` writes and `virsh restore` reads), and the rewrite the
 * helper makes before every `libvirt.restore`: the domain definition embedded in the file is replaced by the helper's
 * own rendering of bcd's plan, so nothing the node wrote (or a downloaded snapshot carried) is ever parsed by libvirt
 * as a definition, and a memory state taken from one instance restores into another (libvirt refuses an `--xml` whose
 * name or UUID differs from the embedded one: "Target domain uuid … does not match source …").
 *
 * Layout (libvirt `qemu_saveimage.h`, native endian, little on x86_64), 92 bytes, then `data_len` bytes of data (the
 * definition NUL-terminated, an optional cookie at `cookie_offset`, zero padding: libvirt pads 64 KiB so a definition
 * can grow), then QEMU's migration stream:
 *
 * | offset | field                        |
 * | ------ | ---------------------------- |
 * | 0      | magic `LibvirtQemudSave` (16) |
 * | 16     | version (u32; 2)             |
 * | 20     | data_len (u32)               |
 * | 24     | was_running (u32)            |
 * | 28     | compressed (u32; 0 = raw)    |
 * | 32     | cookie_offset (u32)          |
 * | 36     | 14 × u32 unused              |
 *
 * A file that is not version 2, is compressed (libvirt would run a decompressor on it), or whose data would not hold
 * the new definition is refused with {@link SaveImageRefused} before anything is written. The rewrite drops the
 * cookie (it names a CPU definition and helpers; bcd's domain XML states its own CPU), keeps `data_len` and so never
 * moves QEMU's stream.
 *
 * @module
 */

/** The magic of a complete save image (a partial one reads `LibvirtQemudPart`). */
export const SAVE_MAGIC = "LibvirtQemudSave";
/** The header's size in bytes. */
export const SAVE_HEADER_BYTES = 92;
/** The only version bcd reads and writes. */
export const SAVE_VERSION = 2;
/** The most data bytes (definition, cookie, padding) bcd accepts before the stream. */
export const MAX_SAVE_DATA = 16 * 1024 * 1024;

/** A save image bcd will not touch, with the reason. */
export class SaveImageRefused extends Error {
  override name = "SaveImageRefused";
  constructor(readonly reason: "bad-state-file", message: string) {
    super(message);
  }
}

/** The decoded header. */
export interface SaveHeader {
  readonly version: number;
  readonly dataLen: number;
  readonly wasRunning: boolean;
  readonly compressed: number;
  readonly cookieOffset: number;
}

/** Decodes and checks the 92-byte header. */
export function parseSaveHeader(b: Uint8Array): SaveHeader {
  if (b.length < SAVE_HEADER_BYTES) {
    throw new SaveImageRefused("bad-state-file", `the state file is ${b.length} bytes, shorter than its header`);
  }
  const magic = new TextDecoder().decode(b.subarray(0, 16));
  if (magic !== SAVE_MAGIC) {
    throw new SaveImageRefused(
      "bad-state-file",
      `the state file's magic is ${JSON.stringify(magic)}, not ${SAVE_MAGIC}`,
    );
  }
  const v = new DataView(b.buffer, b.byteOffset, SAVE_HEADER_BYTES);
  const h: SaveHeader = {
    version: v.getUint32(16, true),
    dataLen: v.getUint32(20, true),
    wasRunning: v.getUint32(24, true) !== 0,
    compressed: v.getUint32(28, true),
    cookieOffset: v.getUint32(32, true),
  };
  if (h.version !== SAVE_VERSION) {
    throw new SaveImageRefused(
      "bad-state-file",
      `the state file is version ${h.version}; only ${SAVE_VERSION} is read`,
    );
  }
  if (h.compressed !== 0) {
    throw new SaveImageRefused("bad-state-file", `the state file is compressed (format ${h.compressed}); only raw`);
  }
  if (h.dataLen < 1 || h.dataLen > MAX_SAVE_DATA) {
    throw new SaveImageRefused(
      "bad-state-file",
      `the state file's data is ${h.dataLen} bytes, not 1 to ${MAX_SAVE_DATA}`,
    );
  }
  if (h.cookieOffset >= h.dataLen) {
    throw new SaveImageRefused("bad-state-file", `the state file's cookie offset ${h.cookieOffset} is past its data`);
  }
  return h;
}

/** The header and data that replace a file's first `92 + dataLen` bytes: `xml` alone, no cookie, zero padded. */
export function encodeSaveData(h: SaveHeader, xml: string): Uint8Array {
  const text = new TextEncoder().encode(xml);
  if (text.includes(0)) throw new SaveImageRefused("bad-state-file", "the definition holds a NUL byte");
  if (text.length + 1 > h.dataLen) {
    throw new SaveImageRefused(
      "bad-state-file",
      `the definition (${text.length + 1} bytes) does not fit the state file's ${h.dataLen} data bytes`,
    );
  }
  const out = new Uint8Array(SAVE_HEADER_BYTES + h.dataLen);
  out.set(new TextEncoder().encode(SAVE_MAGIC), 0);
  const v = new DataView(out.buffer);
  v.setUint32(16, h.version, true);
  v.setUint32(20, h.dataLen, true);
  v.setUint32(24, h.wasRunning ? 1 : 0, true);
  v.setUint32(28, 0, true);
  v.setUint32(32, 0, true);
  out.set(text, SAVE_HEADER_BYTES);
  return out;
}

/** A whole save image with `xml` and a stream (the fake `virsh save` writes these; libvirt pads 64 KiB the same). */
export function buildSaveImage(xml: string, wasRunning: boolean, stream: Uint8Array): Uint8Array {
  const dataLen = new TextEncoder().encode(xml).length + 1 + 64 * 1024;
  const head = encodeSaveData({ version: SAVE_VERSION, dataLen, wasRunning, compressed: 0, cookieOffset: 0 }, xml);
  const out = new Uint8Array(head.length + stream.length);
  out.set(head);
  out.set(stream, head.length);
  return out;
}

/** The definition embedded in a save image's data (up to its NUL). */
export function embeddedXml(h: SaveHeader, data: Uint8Array): string {
  const end = data.indexOf(0);
  const stop = h.cookieOffset > 0 ? Math.min(h.cookieOffset, end < 0 ? h.dataLen : end) : end < 0 ? h.dataLen : end;
  return new TextDecoder().decode(data.subarray(0, stop));
}

/**
 * Replaces the definition in the save image at `path` with `xml`, in place. The file must be the regular file `lstat`
 * saw (its device and inode are compared after the open, so a link swapped in meanwhile is refused).
 */
export async function rewriteSaveImage(path: string, xml: string): Promise<void> {
  const before = await Deno.lstat(path);
  if (!before.isFile) throw new SaveImageRefused("bad-state-file", `${path} is not a plain file`);
  const f = await Deno.open(path, { read: true, write: true });
  try {
    const st = await f.stat();
    if (!st.isFile || st.ino !== before.ino || st.dev !== before.dev) {
      throw new SaveImageRefused("bad-state-file", `${path} changed while it was opened`);
    }
    const head = new Uint8Array(SAVE_HEADER_BYTES);
    if (await _readFull(f, head) < SAVE_HEADER_BYTES) {
      throw new SaveImageRefused("bad-state-file", `${path} is shorter than a save image's header`);
    }
    const h = parseSaveHeader(head);
    if (st.size < SAVE_HEADER_BYTES + h.dataLen) {
      throw new SaveImageRefused("bad-state-file", `${path} ends inside its header data`);
    }
    const out = encodeSaveData(h, xml);
    await f.seek(0, Deno.SeekMode.Start);
    let off = 0;
    while (off < out.length) off += await f.write(out.subarray(off));
    await f.syncData();
  } finally {
    f.close();
  }
}

async function _readFull(f: Deno.FsFile, buf: Uint8Array): Promise<number> {
  let off = 0;
  while (off < buf.length) {
    const n = await f.read(buf.subarray(off));
    if (n === null) break;
    off += n;
  }
  return off;
}
