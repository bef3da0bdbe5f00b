/**
 * Test support: OpenSSH public key lines built from SSH wire fields, real keys from WebCrypto, and hostile variants.
 *
 * @module
 */

const _enc = new TextEncoder();

/** An RFC 4251 `string` (u32 length, bytes). */
export function sshString(v: string | Uint8Array): Uint8Array {
  const b = typeof v === "string" ? _enc.encode(v) : v;
  const out = new Uint8Array(4 + b.length);
  new DataView(out.buffer).setUint32(0, b.length);
  out.set(b, 4);
  return out;
}

/** Concatenates fields into a blob. */
export function sshBlob(...fields: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(fields.reduce((n, f) => n + f.length, 0));
  let at = 0;
  for (const f of fields) {
    out.set(f, at);
    at += f.length;
  }
  return out;
}

/** Base64 of bytes. */
export function b64(b: Uint8Array): string {
  return btoa(String.fromCharCode(...b));
}

/** A real Ed25519 public key line. */
export async function ed25519Line(comment = "ca@test"): Promise<string> {
  const kp = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]) as CryptoKeyPair;
  const raw = new Uint8Array(await crypto.subtle.exportKey("raw", kp.publicKey));
  return `ssh-ed25519 ${b64(sshBlob(sshString("ssh-ed25519"), sshString(raw)))}${comment ? ` ${comment}` : ""}`;
}

/** A real ECDSA P-256 public key line. */
export async function p256Line(): Promise<string> {
  const kp = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
  const raw = new Uint8Array(await crypto.subtle.exportKey("raw", kp.publicKey));
  const t = "ecdsa-sha2-nistp256";
  return `${t} ${b64(sshBlob(sshString(t), sshString("nistp256"), sshString(raw)))}`;
}

/** An RSA public key line with a `bits`-bit modulus (not a real key: the parser checks shape only). */
export function rsaLine(bits: number): string {
  const n = new Uint8Array(bits / 8 + 1);
  n[1] = 0xc5;
  n[n.length - 1] = 0x01;
  return `ssh-rsa ${b64(sshBlob(sshString("ssh-rsa"), sshString(new Uint8Array([1, 0, 1])), sshString(n)))}`;
}

/** Runs `f`, which must throw an instance of `cls`; returns the error. */
export function caught<E extends Error>(f: () => unknown, cls: new (...a: never[]) => E): E {
  try {
    f();
  } catch (e) {
    if (e instanceof cls) return e;
    throw e;
  }
  throw new Error(`expected ${cls.name} to be thrown`);
}
