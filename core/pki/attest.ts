/**
 * Attested results and reports, signed by the node key.
 *
 * - `CommandUpdate.node_sig`: Ed25519 under purpose `command-result` over
 *   `u16 len ‖ command id ‖ u16 len ‖ state ‖ SHA-256(result bytes)` (lengths big-endian, UTF-8 strings).
 * - `AttestedReport`: the node's Ed25519 signature under purpose `attested-report` over the exact report body bytes.
 *
 * @module
 */
import { sha256, signEd25519, verifyEd25519 } from "./ed25519.ts";
import { signedMessage } from "./purpose.ts";

/** The bytes `node_sig` covers (before domain separation). */
export async function resultStatement(commandId: string, state: string, result: Uint8Array): Promise<Uint8Array> {
  const enc = new TextEncoder();
  const id = enc.encode(commandId);
  const st = enc.encode(state);
  if (id.length > 0xffff || st.length > 0xffff) throw new RangeError("command id or state too long to attest");
  const digest = await sha256(result);
  const out = new Uint8Array(2 + id.length + 2 + st.length + digest.length);
  const dv = new DataView(out.buffer);
  dv.setUint16(0, id.length);
  out.set(id, 2);
  dv.setUint16(2 + id.length, st.length);
  out.set(st, 4 + id.length);
  out.set(digest, 4 + id.length + st.length);
  return out;
}

/** Signs an attested command result: the `node_sig` of its `CommandUpdate`. */
export async function signCommandResult(
  nodeKey: CryptoKey,
  commandId: string,
  state: string,
  result: Uint8Array,
): Promise<Uint8Array> {
  return await signEd25519(nodeKey, signedMessage("command-result", await resultStatement(commandId, state, result)));
}

/** Verifies a `node_sig` as a worker does against the node's key. */
export async function verifyCommandResult(
  nodePublicKey: Uint8Array,
  commandId: string,
  state: string,
  result: Uint8Array,
  nodeSig: Uint8Array,
): Promise<boolean> {
  const msg = signedMessage("command-result", await resultStatement(commandId, state, result));
  return await verifyEd25519(nodePublicKey, nodeSig, msg);
}

/** Signs an `AttestedReport` body (an allocation event) with the node key. */
export async function signAttestedReport(nodeKey: CryptoKey, body: Uint8Array): Promise<Uint8Array> {
  return await signEd25519(nodeKey, signedMessage("attested-report", body));
}

/** Verifies an `AttestedReport` signature over the exact body bytes. */
export async function verifyAttestedReport(
  nodePublicKey: Uint8Array,
  body: Uint8Array,
  signature: Uint8Array,
): Promise<boolean> {
  return await verifyEd25519(nodePublicKey, signature, signedMessage("attested-report", body));
}
