/**
 * A throwaway PKI for tests and the testbed gateway: a command-signing root, a worker signer certified by it and a
 * set of approvers, with the matching trust bundle.
 *
 * @module
 */
import { generateSigningKeyPair, type SigningKeyPair } from "./ed25519.ts";
import { issueWorkerCertificate } from "./certificate.ts";
import type { WorkerSigner } from "./envelope.ts";
import type { Purpose } from "./purpose.ts";
import { makeTrustBundle, type TrustBundle } from "./trust_bundle.ts";

/** The keys and bundle {@link makeTestPki} returns. */
export interface TestPki {
  readonly root: SigningKeyPair;
  readonly worker: WorkerSigner;
  readonly approvers: readonly SigningKeyPair[];
  readonly bundle: TrustBundle;
}

/** Makes a root, a worker certified for `purposes` over `[notBefore, notAfter]`, and `approvers` approver keys. */
export async function makeTestPki(opts: {
  approvers?: number;
  threshold?: number;
  purposes?: readonly Purpose[];
  notBefore?: number;
  notAfter?: number;
} = {}): Promise<TestPki> {
  const root = await generateSigningKeyPair();
  const workerKey = await generateSigningKeyPair();
  const certificate = await issueWorkerCertificate(root, {
    publicKey: workerKey.publicKey,
    purposes: opts.purposes ?? ["command", "desired-state"],
    notBefore: opts.notBefore ?? 0,
    notAfter: opts.notAfter ?? 8_000_000_000_000,
    serial: "test-worker-1",
  });
  const approvers: SigningKeyPair[] = [];
  for (let i = 0; i < (opts.approvers ?? 0); i++) approvers.push(await generateSigningKeyPair());
  const bundle = makeTrustBundle({
    commandSigningRoots: [root.publicKey],
    approverKeys: approvers.map((a) => a.publicKey),
    approvalThreshold: opts.threshold ?? 0,
  });
  return { root, worker: { key: workerKey, certificate }, approvers, bundle };
}
