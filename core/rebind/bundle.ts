/**
 * The identity rebind bundle (000 §Identity rebind): the sealed secret `InstanceSpec.identity_rebind_ref` names,
 * released by the control plane over a `SecretRequest`, `{"v":1,"account","principals","hostKey"?,"hostCertificate"?}`.
 * {@link parseRebind} checks it as the seed's `runtime.ParseRebind` does, in this order: size (before decoding), JSON
 * object, no unknown key, version 1, the account name, the principal lines, and a PEM host key with an OpenSSH
 * certificate line, or neither. A bundle it refuses is {@link RebindMalformed} and is never retried.
 *
 * @module
 */

/** A checked bundle. */
export interface RebindBundle {
  readonly account: string;
  /** One principal per line, each line ending in `\n`. */
  readonly principals: string;
  /** The PEM host key and its OpenSSH certificate line, both or neither. */
  readonly hostKey?: string;
  readonly hostCertificate?: string;
}

/** The reason a malformed bundle carries. */
export const REBIND_MALFORMED = "rebind-malformed";

/** A bundle that is not the seed's shape: the rebind of that reference is not retried. */
export class RebindMalformed extends Error {
  override name = "RebindMalformed";
  readonly reason = REBIND_MALFORMED;
}

/** The largest bundle decoded. */
export const MAX_REBIND_BUNDLE = 64 * 1024;
/** The most principal lines. */
export const MAX_PRINCIPALS = 256;

const _KEYS = new Set(["v", "account", "principals", "hostKey", "hostCertificate"]);
/** A POSIX account name, as `useradd` takes it. */
const ACCOUNT = /^[a-z_][a-z0-9_-]{0,31}$/;
/** A principal: printable ASCII without spaces (sshd reads one per line). */
const PRINCIPAL = /^[\x21-\x7e]{1,256}$/;
const PEM_KEY =
  /^-----BEGIN ([A-Z0-9 ]{1,40}) PRIVATE KEY-----\n(?:[A-Za-z0-9+/=:, -]{0,76}\n){1,200}-----END \1 PRIVATE KEY-----\n?$/;
const CERT_LINE = /^[a-z0-9-]{1,40}-cert-v01@openssh\.com [A-Za-z0-9+/]{16,16384}={0,2}(?: [\x20-\x7e]{0,256})?\n?$/;

function _bad(message: string): never {
  throw new RebindMalformed(message);
}

/** Checks `bytes` as a rebind bundle; throws {@link RebindMalformed} naming the first problem. */
export function parseRebind(bytes: Uint8Array): RebindBundle {
  if (bytes.length > MAX_REBIND_BUNDLE) _bad(`the bundle is ${bytes.length} bytes; at most ${MAX_REBIND_BUNDLE}`);
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    if (e instanceof SyntaxError || e instanceof TypeError) _bad(`the bundle is not JSON: ${e.message}`);
    throw e;
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) _bad("the bundle is not a JSON object");
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!_KEYS.has(k)) _bad(`the bundle has an unknown key ${JSON.stringify(k)}`);
  if (o.v !== 1) _bad(`the bundle's version is ${JSON.stringify(o.v)}; only 1 is known`);
  if (typeof o.account !== "string" || !ACCOUNT.test(o.account)) {
    _bad(`the bundle's account ${JSON.stringify(o.account)} is not an account name`);
  }
  if (typeof o.principals !== "string") _bad("the bundle's principals are not a string");
  const lines = o.principals.replace(/\n$/, "").split("\n");
  if (lines.length > MAX_PRINCIPALS) _bad(`the bundle has ${lines.length} principal lines; at most ${MAX_PRINCIPALS}`);
  for (const [i, l] of lines.entries()) {
    if (!PRINCIPAL.test(l)) _bad(`principal line ${i + 1} ${JSON.stringify(l.slice(0, 80))} is not a principal`);
  }
  const hasKey = o.hostKey !== undefined, hasCert = o.hostCertificate !== undefined;
  if (hasKey !== hasCert) _bad("the bundle has a host key without its certificate, or a certificate without its key");
  const out = { account: o.account, principals: lines.join("\n") + "\n" };
  if (!hasKey) return out;
  if (typeof o.hostKey !== "string" || !PEM_KEY.test(o.hostKey)) _bad("the bundle's hostKey is not a PEM private key");
  if (typeof o.hostCertificate !== "string" || !CERT_LINE.test(o.hostCertificate)) {
    _bad("the bundle's hostCertificate is not one OpenSSH certificate line");
  }
  return {
    ...out,
    hostKey: o.hostKey.endsWith("\n") ? o.hostKey : `${o.hostKey}\n`,
    hostCertificate: o.hostCertificate.endsWith("\n") ? o.hostCertificate : `${o.hostCertificate}\n`,
  };
}
