/**
 * A VM's channel key (issue 21, `auth.ts`): 32 random bytes, written as 64 lowercase hex digits on the seed ISO or the
 * kernel command line. Apart from `auth.ts` (whose MACs use `node:crypto`) so that a node, which only makes and
 * writes keys, loads no `node:` module for them at start (issue 24).
 *
 * @module
 */

/** The length of a channel key, nonce and MAC, in bytes. */
export const CHANNEL_KEY_BYTES = 32;
const HEX64 = /^[0-9a-f]{64}$/;

/** A VM's channel key. */
export type ChannelKey = Uint8Array;

/** A fresh random channel key. */
export function newChannelKey(): ChannelKey {
  return crypto.getRandomValues(new Uint8Array(CHANNEL_KEY_BYTES));
}

/** The key as 64 lowercase hex digits, as it travels on the seed ISO or the kernel command line. */
export function formatChannelKey(key: ChannelKey): string {
  return Array.from(key, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Parses 64 hex digits (surrounding whitespace allowed); throws RangeError on anything else. */
export function parseChannelKey(text: string): ChannelKey {
  const t = text.trim().toLowerCase();
  if (!HEX64.test(t)) throw new RangeError(`a channel key is 64 hex digits (${CHANNEL_KEY_BYTES} bytes)`);
  const out = new Uint8Array(CHANNEL_KEY_BYTES);
  for (let i = 0; i < CHANNEL_KEY_BYTES; i++) out[i] = parseInt(t.slice(2 * i, 2 * i + 2), 16);
  return out;
}
