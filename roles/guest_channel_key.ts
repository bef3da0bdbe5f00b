/**
 * The guest's channel key file (issue 21): `--channel-key-file PATH`, else {@link DEFAULT_CHANNEL_KEY_FILE} when it
 * exists. The host delivers the key through the seed ISO (or `bcd.channel_key=` on the kernel command line, which the
 * init copies into a 0600 file; `/proc/cmdline` is readable by every guest process, so the seed ISO is the better
 * carrier). `guest turns` and `guest serve` read it.
 *
 * @module
 */
import { type ChannelKey, parseChannelKey } from "../core/turns/mod.ts";
import { UsageError } from "./_cli.ts";

/** Where the guest looks for its channel key when no `--channel-key-file` is given. */
export const DEFAULT_CHANNEL_KEY_FILE = "/etc/bcd/channel-key";

/** The key, `undefined` when no flag was given and the default file does not exist; a bad key is a usage error. */
export function channelKeyFromFile(flag: string | undefined, cmd: string): ChannelKey | undefined {
  const path = flag ?? DEFAULT_CHANNEL_KEY_FILE;
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    if (flag !== undefined) throw new UsageError(`${cmd}: --channel-key-file ${flag} does not exist`);
    return undefined;
  }
  try {
    return parseChannelKey(text);
  } catch (e) {
    throw new UsageError(`${cmd}: ${path}: ${(e as Error).message}`);
  }
}
