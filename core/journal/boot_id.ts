/**
 * The boot id: `/proc/sys/kernel/random/boot_id`, injectable by path (`BCD_BOOT_ID_PATH` in the roles) so tests
 * and the crash campaign can simulate reboots.
 *
 * @module
 */

/** Where Linux publishes the current boot's id. */
export const BOOT_ID_PATH = "/proc/sys/kernel/random/boot_id";

const MAX_BOOT_ID = 128;

/** Reads the boot id at `path` (at most 128 bytes are read), trimmed; throws RangeError for an empty or long one. */
export async function readBootId(path: string = BOOT_ID_PATH): Promise<string> {
  const buf = new Uint8Array(MAX_BOOT_ID + 1);
  let n = 0;
  using f = await Deno.open(path, { read: true });
  while (n < buf.length) {
    const r = await f.read(buf.subarray(n));
    if (r === null) break;
    n += r;
  }
  const text = new TextDecoder().decode(buf.subarray(0, n)).trim();
  if (text.length === 0 || n > MAX_BOOT_ID) {
    throw new RangeError(`boot id at ${path} is empty or over ${MAX_BOOT_ID} bytes`);
  }
  return text;
}
