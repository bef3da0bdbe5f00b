/**
 * One OpenSSH public key line (`<type> <base64 blob> [comment]`), parsed down to its key blob: the blob's own type
 * string must equal the line's, every field's length must fit inside the blob, each algorithm's fields must have
 * their shape (an Ed25519 key is 32 bytes, an ECDSA point is uncompressed on the named curve, an RSA modulus is a
 * positive mpint of at least 1024 bits), and nothing may follow the last field. A comment may not name a key type
 * or carry a second key blob: sshd would never read it, but a line that holds two keys is not "exactly one key".
 *
 * Every length is checked against what is left before anything is sliced, and the whole line is bounded by
 * {@link MAX_KEY_LINE} before it is decoded.
 *
 * @module
 */

/** The longest key line accepted (a 16384-bit RSA key is about 2.8 KB of base64). */
export const MAX_KEY_LINE = 8192;

/** The key types a CA key may have (OpenSSH's, without DSA, which sshd no longer accepts as a CA by default). */
export const SSH_KEY_TYPES = [
  "ssh-ed25519",
  "ssh-rsa",
  "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521",
  "sk-ssh-ed25519@openssh.com",
  "sk-ecdsa-sha2-nistp256@openssh.com",
] as const;

/** A key type of {@link SSH_KEY_TYPES}. */
export type SshKeyType = typeof SSH_KEY_TYPES[number];

/** Why a line is not exactly one OpenSSH public key. */
export type KeyRefusal = "control-character" | "not-one-key" | "unknown-key-type" | "bad-key-blob";

/** A key line refused, with the rule it broke. */
export class SshKeyError extends Error {
  override name = "SshKeyError";
  constructor(readonly reason: KeyRefusal, message: string) {
    super(message);
  }
}

/** A parsed key line. */
export interface SshPublicKey {
  readonly type: SshKeyType;
  /** The base64 of the blob, as written. */
  readonly base64: string;
  readonly blob: Uint8Array;
  readonly comment: string;
}

/** C0 and C1 control characters, DEL, and the Unicode line and paragraph separators. */
// deno-lint-ignore no-control-regex
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

const _B64 = /^[A-Za-z0-9+/]+={0,2}$/;
const _POINT: Record<string, number> = { nistp256: 65, nistp384: 97, nistp521: 133 };

/** Whether `s` is a key type of {@link SSH_KEY_TYPES}. */
export function isSshKeyType(s: string): s is SshKeyType {
  return (SSH_KEY_TYPES as readonly string[]).includes(s);
}

/** Reads SSH wire fields (RFC 4251 `string`, `mpint`) from a blob, each length checked against what is left. */
class _Reader {
  #at = 0;
  constructor(readonly b: Uint8Array) {}
  get left(): number {
    return this.b.length - this.#at;
  }
  bytes(what: string): Uint8Array {
    if (this.left < 4) throw _blob(`${what}: the blob ends inside a length`);
    const v = new DataView(this.b.buffer, this.b.byteOffset + this.#at, 4).getUint32(0);
    this.#at += 4;
    if (v > this.left) throw _blob(`${what}: length ${v} passes the ${this.left} bytes left`);
    const out = this.b.subarray(this.#at, this.#at + v);
    this.#at += v;
    return out;
  }
  text(what: string): string {
    const b = this.bytes(what);
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(b);
    } catch (e) {
      if (e instanceof TypeError) throw _blob(`${what} is not UTF-8`);
      throw e;
    }
  }
  /** A positive mpint; returns its magnitude's bit length. */
  mpint(what: string): number {
    const b = this.bytes(what);
    if (b.length === 0) throw _blob(`${what} is zero`);
    if (b[0]! & 0x80) throw _blob(`${what} is negative`);
    if (b[0] === 0 && (b.length === 1 || !(b[1]! & 0x80))) throw _blob(`${what} has a needless leading zero`);
    const mag = b[0] === 0 ? b.subarray(1) : b;
    return (mag.length - 1) * 8 + (32 - Math.clz32(mag[0]!));
  }
}

function _blob(msg: string): SshKeyError {
  return new SshKeyError("bad-key-blob", `key blob: ${msg}`);
}

function _decodeB64(s: string): Uint8Array | undefined {
  if (!_B64.test(s) || s.length % 4 !== 0) return undefined;
  try {
    return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  } catch (e) {
    if (e instanceof DOMException) return undefined;
    throw e;
  }
}

/** Checks a blob's fields for `type`; throws {@link SshKeyError} `bad-key-blob`. */
export function checkKeyBlob(type: SshKeyType, blob: Uint8Array): void {
  const r = new _Reader(blob);
  const inner = r.text("key type");
  if (inner !== type) throw _blob(`type ${JSON.stringify(inner)} inside a ${type} line`);
  switch (type) {
    case "ssh-ed25519":
    case "sk-ssh-ed25519@openssh.com": {
      const pk = r.bytes("ed25519 public key");
      if (pk.length !== 32) throw _blob(`ed25519 public key is ${pk.length} bytes, not 32`);
      if (type === "sk-ssh-ed25519@openssh.com") r.text("application");
      break;
    }
    case "ssh-rsa": {
      r.mpint("rsa exponent");
      const bits = r.mpint("rsa modulus");
      if (bits < 1024) throw _blob(`rsa modulus is ${bits} bits (at least 1024)`);
      break;
    }
    default: {
      const curve = r.text("curve");
      const want = type.replace(/^(?:sk-)?ecdsa-sha2-/, "").replace(/@openssh\.com$/, "");
      if (curve !== want) throw _blob(`curve ${JSON.stringify(curve)} inside a ${type} key`);
      const q = r.bytes("ecdsa point");
      if (q.length !== _POINT[curve] || q[0] !== 0x04) throw _blob(`ecdsa point is not an uncompressed ${curve} point`);
      if (type.startsWith("sk-")) r.text("application");
    }
  }
  if (r.left !== 0) throw _blob(`${r.left} bytes after the last field`);
}

/** Whether a token of a comment is a key type name or a key blob of a known type. */
function _looksLikeKey(token: string): boolean {
  if (isSshKeyType(token) || /-cert-v01@openssh\.com$/.test(token)) return true;
  const b = _decodeB64(token);
  if (!b || b.length < 4) return false;
  const n = new DataView(b.buffer).getUint32(0);
  if (n > b.length - 4) return false;
  return isSshKeyType(new TextDecoder().decode(b.subarray(4, 4 + n)));
}

/**
 * Parses `line` as exactly one OpenSSH public key of a known type; throws {@link SshKeyError} naming the rule.
 *
 * @example
 * ```ts
 * const k = parseSshPublicKey("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG... ca@example");
 * k.type; // "ssh-ed25519"
 * ```
 */
export function parseSshPublicKey(line: string): SshPublicKey {
  if (line.length > MAX_KEY_LINE) {
    throw new SshKeyError("not-one-key", `key line of ${line.length} characters passes ${MAX_KEY_LINE}`);
  }
  const cc = CONTROL_CHARACTER.exec(line);
  if (cc) {
    const code = cc[0].charCodeAt(0).toString(16).padStart(4, "0");
    throw new SshKeyError("control-character", `key line holds control character U+${code} at ${cc.index}`);
  }
  const tokens = line.split(" ").filter((t) => t !== "");
  const [type, b64, ...rest] = tokens;
  if (type === undefined || b64 === undefined) {
    throw new SshKeyError("not-one-key", `key line ${JSON.stringify(line.slice(0, 60))} is not "<type> <base64>"`);
  }
  if (!isSshKeyType(type)) {
    throw new SshKeyError(
      "unknown-key-type",
      `key type ${JSON.stringify(type.slice(0, 60))} is not one of ${SSH_KEY_TYPES.join(", ")}`,
    );
  }
  const blob = _decodeB64(b64);
  if (!blob) throw _blob("not base64");
  checkKeyBlob(type, blob);
  const extra = rest.find(_looksLikeKey);
  if (extra !== undefined) {
    throw new SshKeyError("not-one-key", `key line carries a second key (${JSON.stringify(extra.slice(0, 40))})`);
  }
  return { type, base64: b64, blob, comment: rest.join(" ") };
}
