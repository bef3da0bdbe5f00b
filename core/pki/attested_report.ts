/**
 * Node-signed `AttestedReport`s for allocation events (`AllocationBound`, `AllocationReleased`, `AllocationFailed`):
 * the `ReportBody` is encoded once and the node key signs those exact bytes under purpose `attested-report`; a worker
 * verifies the bytes it received against the node's certificate before any state transition.
 *
 * @module
 */
import { bcd, decodeMessage, encodeMessage, type Props } from "../../proto/mod.ts";
import { signAttestedReport, verifyAttestedReport } from "./attest.ts";

/** The wire `AttestedReport`. */
export interface AttestedReportWire {
  readonly body: Uint8Array;
  readonly node_sig: Uint8Array;
}

/** Encodes `report` and signs it with the node key. */
export async function attestReport(
  nodeKey: CryptoKey,
  report: Props<typeof bcd.v1.ReportBody>,
): Promise<AttestedReportWire> {
  const body = encodeMessage(bcd.v1.ReportBody, report);
  return { body, node_sig: await signAttestedReport(nodeKey, body) };
}

/**
 * A worker's check: the signature over the exact body bytes with the node's key, and the body names `nodeId`.
 * Returns the decoded body, or null when either fails.
 */
export async function openAttestedReport(
  nodePublicKey: Uint8Array,
  nodeId: string,
  report: AttestedReportWire,
) {
  if (!await verifyAttestedReport(nodePublicKey, report.body, report.node_sig)) return null;
  const body = decodeMessage(bcd.v1.ReportBody, report.body, { maxBytes: 64 * 1024 });
  return body.node_id === nodeId ? body : null;
}
