/**
 * The guest's channel key file (issue 21): the VM's one secret, 64 hex digits, that proves the host on the turn
 * protocol (`core/turns/auth.ts`) and on the control framing (`core/framing/attach.ts`, where it is the seed's launch
 * capability). bcd-vm's launch writes it into the VM's initramfs; a libvirt instance's init copies it from the NoCloud
 * seed ISO (file `bcd-channel-key`), never from the kernel command line, which every guest process can read (seed 001
 * §Secrets). `guest turns`, `guest serve` and the layered worker read it.
 *
 * @module
 */
import { type ChannelKey, parseChannelKey } from "../core/turns/mod.ts";

/** Where the guest looks for its channel key when none is named. */
export const DEFAULT_CHANNEL_KEY_FILE = "/etc/bcd/channel-key";

/** The key in `path`, or `undefined` when there is no such file; throws RangeError for a file that is no key. */
export function readChannelKeyFile(path: string): ChannelKey | undefined {
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
  try {
    return parseChannelKey(text);
  } catch (e) {
    throw new RangeError(`${path}: ${(e as Error).message}`, { cause: e });
  }
}
