/**
 * An instance's channel key on the node (issue 21): 32 random bytes, kept as 64 hex digits in
 * `instances/<id>/channel.key` (mode 0600, the node's), written onto the instance's seed ISO for the guest, and used
 * by the node to prove both guest channels (the turn protocol for `instance.migrate`, the control framing for fleet
 * config). Made once, at the first define; kept across redefines, so a running guest's key never changes under it.
 *
 * @module
 */
import { CHANNEL_KEY_FILE } from "../../core/converge/instances/domain_plan.ts";
import { type ChannelKey, formatChannelKey, newChannelKey, parseChannelKey } from "../../core/turns/channel_key.ts";

/** The instance's key in `dir`, or `undefined` when it has none (an instance defined before keys, or restored). */
export async function readChannelKey(dir: string): Promise<ChannelKey | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(`${dir}/${CHANNEL_KEY_FILE}`);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
  return parseChannelKey(text);
}

/** The instance's key, made (0600, written to a temporary file and renamed) when it has none. */
export async function ensureChannelKey(dir: string): Promise<ChannelKey> {
  const have = await readChannelKey(dir);
  if (have !== undefined) return have;
  const key = newChannelKey();
  const tmp = `${dir}/${CHANNEL_KEY_FILE}.tmp`;
  await Deno.writeTextFile(tmp, formatChannelKey(key) + "\n", { mode: 0o600 });
  await Deno.rename(tmp, `${dir}/${CHANNEL_KEY_FILE}`);
  return key;
}
