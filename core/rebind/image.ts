/**
 * The rebind disk's contents (000 §Identity rebind): a raw 1 MiB image holding a tar at offset 0 (`nonce`,
 * `account`, `principals` and, with a host key, `host_key` and `host_key-cert.pub`), its last 4 KiB reserved for the
 * guest's answer, `BCREBOUND <nonce>` at the start of that block.
 *
 * Restored placeholder (the seed's export stripped it): the answer line is `BCREBOUND <nonce>`, the nonce of the tar
 * the guest read, so an answer left from another try (or another disk) never counts; the line ends at a newline or
 * NUL.
 *
 * @module
 */
import { tar } from "../images/ustar_writer.ts";
import type { RebindBundle } from "./bundle.ts";

/** The image's size. */
export const REBIND_DISK_BYTES = 1024 * 1024;
/** The answer block's size, at the image's end. */
export const REBIND_ANSWER_BYTES = 4096;
/** Where the answer block starts. */
export const REBIND_ANSWER_OFFSET = REBIND_DISK_BYTES - REBIND_ANSWER_BYTES;
/** The answer's first word. */
export const REBIND_ANSWER_WORD = "BCREBOUND";
/** The disk's virtio serial, by which the guest finds it. */
export const REBIND_SERIAL = "bc-rebind";
/** The guest device name the runtimes ask for. */
export const REBIND_TARGET = "vdz";

const enc = new TextEncoder();

/** A fresh nonce: 32 lowercase hex digits. */
export function rebindNonce(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The 1 MiB image for `bundle` and `nonce`. */
export function rebindImage(bundle: RebindBundle, nonce: string): Uint8Array {
  if (!/^[0-9a-f]{32}$/.test(nonce)) throw new RangeError(`rebind nonce ${JSON.stringify(nonce)} is not 32 hex digits`);
  const files = [
    { name: "nonce", data: enc.encode(`${nonce}\n`) },
    { name: "account", data: enc.encode(`${bundle.account}\n`) },
    { name: "principals", data: enc.encode(bundle.principals) },
    ...(bundle.hostKey !== undefined && bundle.hostCertificate !== undefined
      ? [
        { name: "host_key", data: enc.encode(bundle.hostKey) },
        { name: "host_key-cert.pub", data: enc.encode(bundle.hostCertificate) },
      ]
      : []),
  ];
  const t = tar(files.map((f) => ({ ...f, mtimeMs: 0 })));
  if (t.length > REBIND_ANSWER_OFFSET) throw new RangeError(`the rebind tar is ${t.length} bytes; it must leave 4 KiB`);
  const img = new Uint8Array(REBIND_DISK_BYTES);
  img.set(t, 0);
  return img;
}

/** Whether the answer block holds `BCREBOUND <nonce>`. */
export function isRebindAnswer(block: Uint8Array, nonce: string): boolean {
  const head = block.subarray(0, Math.min(block.length, 128));
  let end = head.findIndex((b) => b === 0x0a || b === 0);
  if (end < 0) end = head.length;
  return new TextDecoder().decode(head.subarray(0, end)).trimEnd() === `${REBIND_ANSWER_WORD} ${nonce}`;
}
