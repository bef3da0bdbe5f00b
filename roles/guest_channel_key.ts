/**
 * `--channel-key-file PATH` of `guest turns` and `guest serve`, else {@link DEFAULT_CHANNEL_KEY_FILE} when it exists
 * (`guest/channel_key.ts`); a missing named file or a malformed key is a usage error.
 *
 * @module
 */
import { type ChannelKey } from "../core/turns/mod.ts";
import { DEFAULT_CHANNEL_KEY_FILE, readChannelKeyFile } from "../guest/channel_key.ts";
import { UsageError } from "./_cli.ts";

export { DEFAULT_CHANNEL_KEY_FILE };

/** The key, `undefined` when no flag was given and the default file does not exist. */
export function channelKeyFromFile(flag: string | undefined, cmd: string): ChannelKey | undefined {
  let key: ChannelKey | undefined;
  try {
    key = readChannelKeyFile(flag ?? DEFAULT_CHANNEL_KEY_FILE);
  } catch (e) {
    if (e instanceof RangeError) throw new UsageError(`${cmd}: ${e.message}`);
    throw e;
  }
  if (key === undefined && flag !== undefined) {
    throw new UsageError(`${cmd}: --channel-key-file ${flag} does not exist`);
  }
  return key;
}
