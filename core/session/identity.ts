/**
 * The node's identity: its Ed25519 key (`data_dir/node.key`, PKCS#8, mode 0600), and in `identity.json` its node id,
 * certificate chain, trust bundle and gateway URL. Join happens once, with a one-time token: the node generates its
 * key, proves possession, and the gateway answers with its certificate chain and trust bundle.
 *
 * @module
 */
import { bcd, decodeMessage, encodeMessage, type Props, WireDecodeError } from "../../proto/mod.ts";
import { readIdentity, updateIdentity } from "../journal/mod.ts";
import { writeFileDurable } from "../journal/durable_file.ts";
import { importSigningKeyPair, makeTrustBundle, type SigningKeyPair, type TrustBundle } from "../pki/mod.ts";
import { signJoinProof } from "./proofs.ts";
import { checkTransportUrl } from "./url_policy.ts";

/** The key file inside `data_dir`. */
export const NODE_KEY_FILE = "node.key";

/** What a joined node knows about itself. */
export interface NodeIdentity {
  readonly nodeId: string;
  readonly key: SigningKeyPair;
  /** Encoded `SignedCertificate`s, the node's first. */
  readonly certChain: readonly Uint8Array[];
  /** The encoded `TrustBundle` as last received (JoinResponse or Welcome). */
  readonly trustBundle: Uint8Array;
  readonly gatewayUrl: string;
}

/** A join the gateway refused (`join-refused`) or that never reached it (`join-unreachable`), or an identity that cannot be used. */
export class IdentityError extends Error {
  override name = "IdentityError";
  constructor(readonly reason: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

const b64 = (b: Uint8Array) => btoa(String.fromCharCode(...b));
function unb64(s: unknown, what: string): Uint8Array {
  if (typeof s !== "string") throw new IdentityError("identity-invalid", `identity.json: ${what} is not a string`);
  try {
    return Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  } catch (e) {
    throw new IdentityError("identity-invalid", `identity.json: ${what} is not base64`, { cause: e });
  }
}

/** Converts the wire trust bundle into the one core/pki enforces. */
export function trustBundleFromWire(bytes: Uint8Array): TrustBundle {
  if (bytes.length === 0) return makeTrustBundle({});
  const tb = decodeMessage(bcd.v1.TrustBundle, bytes, { maxBytes: 256 * 1024 });
  return makeTrustBundle({
    commandSigningRoots: (tb.command_signing_roots ?? []).map((k) => k.public_key ?? new Uint8Array()),
    approverKeys: (tb.approver_keys ?? []).map((k) => k.public_key ?? new Uint8Array()),
    approvalThreshold: tb.approver_threshold ?? 0,
  });
}

/** The trust bundle's `unbatched_destructive_per_hour` (0 when absent). */
export function unbatchedFromWire(bytes: Uint8Array): number {
  if (bytes.length === 0) return 0;
  return decodeMessage(bcd.v1.TrustBundle, bytes, { maxBytes: 256 * 1024 }).unbatched_destructive_per_hour ?? 0;
}

/** The trust bundle's release keys (raw Ed25519 public keys; none when absent). */
export function releaseKeysFromWire(bytes: Uint8Array): Uint8Array[] {
  if (bytes.length === 0) return [];
  return (decodeMessage(bcd.v1.TrustBundle, bytes, { maxBytes: 256 * 1024 }).release_keys ?? [])
    .map((k) => k.public_key ?? new Uint8Array());
}

/** Loads the identity of `dataDir`; `undefined` when the node has not joined. */
export async function loadIdentity(dataDir: string): Promise<NodeIdentity | undefined> {
  const id = await readIdentity(dataDir);
  if (!id || typeof id.node_id !== "string") return undefined;
  let pkcs8: Uint8Array;
  try {
    pkcs8 = await Deno.readFile(`${dataDir}/${NODE_KEY_FILE}`);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new IdentityError(
        "identity-invalid",
        `${dataDir}/${NODE_KEY_FILE} is missing while identity.json names a node`,
      );
    }
    throw e;
  }
  const key = await importSigningKeyPair(pkcs8, unb64(id.public_key, "public_key"));
  const chain = Array.isArray(id.cert_chain) ? id.cert_chain.map((c, i) => unb64(c, `cert_chain[${i}]`)) : [];
  return {
    nodeId: id.node_id,
    key,
    certChain: chain,
    trustBundle: id.trust_bundle === undefined ? new Uint8Array() : unb64(id.trust_bundle, "trust_bundle"),
    gatewayUrl: typeof id.gateway_url === "string" ? id.gateway_url : "",
  };
}

/** Stores a newer trust bundle (from `Welcome`). */
export async function saveTrustBundle(dataDir: string, bundle: Uint8Array): Promise<void> {
  await updateIdentity(dataDir, { trust_bundle: b64(bundle) });
}

/** Options of {@link join}. */
export interface JoinOptions {
  readonly dataDir: string;
  readonly joinUrl: string;
  readonly token: string;
  readonly role: string;
  readonly hostname: string;
  readonly agentVersion: string;
  /** `fetch`, injectable. */
  readonly fetch?: typeof fetch;
}

/** Joins once (`https:`, or `http:` to a loopback address only: {@link checkTransportUrl}): generates the key, presents it with the token, stores key and identity durably. */
export async function join(opts: JoinOptions): Promise<NodeIdentity> {
  checkTransportUrl(opts.joinUrl, "join");
  const kp = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]) as CryptoKeyPair;
  const publicKey = new Uint8Array(await crypto.subtle.exportKey("raw", kp.publicKey));
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", kp.privateKey));
  const req: Props<typeof bcd.v1.JoinRequest> = {
    token: opts.token,
    public_key: publicKey,
    role: opts.role,
    hostname: opts.hostname,
    agent_version: opts.agentVersion,
    proof: await signJoinProof(kp.privateKey, opts.token, publicKey),
  };
  let res: Response;
  let bytes: Uint8Array;
  try {
    res = await (opts.fetch ?? fetch)(opts.joinUrl, {
      method: "POST",
      headers: { "content-type": "application/x-protobuf" },
      body: encodeMessage(bcd.v1.JoinRequest, req) as Uint8Array<ArrayBuffer>,
    });
    bytes = new Uint8Array(await res.arrayBuffer());
  } catch (e) {
    // fetch's network failures (no route, refused, TLS) are TypeErrors with the cause inside.
    if (!(e instanceof TypeError)) throw e;
    const why = e.cause instanceof Error ? `: ${e.cause.message}` : "";
    throw new IdentityError("join-unreachable", `cannot reach ${opts.joinUrl} (${e.message}${why})`, { cause: e });
  }
  if (!res.ok) {
    throw new IdentityError(
      "join-refused",
      `join refused (${res.status}): ${new TextDecoder().decode(bytes).slice(0, 200)}`,
    );
  }
  let jr: bcd.v1.JoinResponse;
  try {
    jr = decodeMessage(bcd.v1.JoinResponse, bytes, { maxBytes: 256 * 1024 });
  } catch (e) {
    if (e instanceof WireDecodeError) {
      throw new IdentityError("join-refused", `join response: ${e.message}`, { cause: e });
    }
    throw e;
  }
  if (!jr.node_id) throw new IdentityError("join-refused", "join response names no node id");
  await Deno.mkdir(opts.dataDir, { recursive: true, mode: 0o700 });
  await writeFileDurable(`${opts.dataDir}/${NODE_KEY_FILE}`, pkcs8, 0o600);
  const chain = (jr.cert_chain ?? []).map((c) => encodeMessage(bcd.v1.SignedCertificate, c));
  const trust = jr.trust_bundle ? encodeMessage(bcd.v1.TrustBundle, jr.trust_bundle) : new Uint8Array();
  await updateIdentity(opts.dataDir, {
    node_id: jr.node_id,
    public_key: b64(publicKey),
    cert_chain: chain.map(b64),
    trust_bundle: b64(trust),
    gateway_url: jr.gateway_url ?? "",
  });
  return {
    nodeId: jr.node_id,
    key: await importSigningKeyPair(pkcs8, publicKey),
    certChain: chain,
    trustBundle: trust,
    gatewayUrl: jr.gateway_url ?? "",
  };
}
