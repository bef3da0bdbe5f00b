import assert from "node:assert/strict";
import { bcd, encodeMessage, type Props } from "../../proto/mod.ts";
import { generateSigningKeyPair, issueWorkerCertificate, type Purpose, signEnvelope } from "../pki/mod.ts";
import type { SigningKeyPair, WorkerSigner } from "../pki/mod.ts";
import { type OfferedBundle, takeTrustBundle } from "./trust_rotation.ts";

type Tb = Props<typeof bcd.v1.TrustBundle>;
const NOW = 1_800_000_000_000;
const enc = (tb: Tb) => encodeMessage(bcd.v1.TrustBundle, tb);
const pk = (k: SigningKeyPair, name: string) => ({ key_id: name, public_key: k.publicKey, name });

async function worker(root: SigningKeyPair, purposes: Purpose[] = ["trust-bundle"], notAfter = NOW + 60_000) {
  const key = await generateSigningKeyPair();
  const certificate = await issueWorkerCertificate(root, {
    publicKey: key.publicKey,
    purposes,
    notBefore: 0,
    notAfter,
    serial: "w",
  });
  return { key, certificate } satisfies WorkerSigner;
}

Deno.test("takeTrustBundle(): the rotation rules, row by row", async (t) => {
  const root = await generateSigningKeyPair();
  const other = await generateSigningKeyPair();
  const approver = await generateSigningKeyPair();
  const held: Tb = { version: 5, command_signing_roots: [pk(root, "r")], approver_keys: [pk(approver, "a")] };
  const heldBytes = enc(held);
  const good = await worker(root);
  const signedBy = async (w: WorkerSigner, tb: Tb) => {
    const bundle = enc(tb);
    return { signed_trust_bundle: { bundle, signature: await signEnvelope(w, "trust-bundle", bundle) } };
  };
  const rows: {
    name: string;
    held: Uint8Array;
    offered: () => OfferedBundle | Promise<OfferedBundle>;
    want: "keep" | "take" | "refuse";
    match?: RegExp;
  }[] = [
    { name: "nothing offered keeps the held bundle", held: heldBytes, offered: () => ({}), want: "keep" },
    {
      name: "the same bundle, unsigned, changes nothing",
      held: heldBytes,
      offered: () => ({ trust_bundle: held }),
      want: "keep",
    },
    {
      name: "no roots held: an unsigned bundle with roots is taken (how roots first arrive)",
      held: new Uint8Array(),
      offered: () => ({ trust_bundle: held }),
      want: "take",
    },
    {
      name: "roots held: an unsigned bundle without roots is refused",
      held: heldBytes,
      offered: () => ({ trust_bundle: { version: 6 } }),
      want: "refuse",
      match: /unsigned trust bundle that differs.*roots 1 → 0/,
    },
    {
      name: "roots held: an unsigned bundle that only adds a root is refused too",
      held: heldBytes,
      offered: () => ({
        trust_bundle: { ...held, version: 6, command_signing_roots: [pk(root, "r"), pk(other, "o")] },
      }),
      want: "refuse",
    },
    {
      name: "a signed rotation chaining to the held root with a higher version is taken",
      held: heldBytes,
      offered: () => signedBy(good, { ...held, version: 6, command_signing_roots: [pk(root, "r"), pk(other, "o")] }),
      want: "take",
    },
    {
      name: "a signed bundle of a version not above the held one is refused (replay)",
      held: heldBytes,
      offered: () => signedBy(good, { ...held, version: 5, command_signing_roots: [pk(other, "o")] }),
      want: "refuse",
      match: /version 5, not above the held version 5/,
    },
    {
      name: "a bundle signed under a root the node does not hold is refused",
      held: heldBytes,
      offered: async () => signedBy(await worker(other), { version: 9, command_signing_roots: [pk(other, "o")] }),
      want: "refuse",
      match: /does not chain to the held roots/,
    },
    {
      name: "a worker certified for commands only cannot sign a bundle",
      held: heldBytes,
      offered: async () => signedBy(await worker(root, ["command"]), { version: 9 }),
      want: "refuse",
      match: /purpose/,
    },
    {
      name: "a signer whose certificate expired in server time is refused",
      held: heldBytes,
      offered: async () => signedBy(await worker(root, ["trust-bundle"], NOW - 1), { ...held, version: 9 }),
      want: "refuse",
      match: /window/,
    },
    {
      name: "a signature over other bytes is refused",
      held: heldBytes,
      offered: async () => {
        const s = await signedBy(good, { ...held, version: 9 });
        return { signed_trust_bundle: { bundle: enc({ version: 9 }), signature: s.signed_trust_bundle.signature } };
      },
      want: "refuse",
    },
    {
      name: "no roots held: an unsigned bundle removing the approver keys is refused",
      held: enc({ version: 1, approver_keys: [pk(approver, "a")] }),
      offered: () => ({ trust_bundle: { version: 2 } }),
      want: "refuse",
      match: /removes approver keys/,
    },
    {
      name: "an undecodable signed bundle is refused",
      held: heldBytes,
      offered: () => ({
        signed_trust_bundle: { bundle: new Uint8Array([0xff, 0xff]), signature: new Uint8Array() },
      }),
      want: "refuse",
    },
    {
      name: "an invalid key length is refused",
      held: new Uint8Array(),
      offered: () => ({
        trust_bundle: { version: 1, command_signing_roots: [{ public_key: new Uint8Array(5) }] },
      }),
      want: "refuse",
      match: /invalid/,
    },
  ];
  for (const r of rows) {
    await t.step(r.name, async () => {
      const d = await takeTrustBundle(r.held, await r.offered(), NOW);
      assert.equal(d.action, r.want, JSON.stringify(d));
      if (r.match && d.action === "refuse") assert.match(d.why, r.match);
    });
  }
});

Deno.test("takeTrustBundle(): a signed rotation that removes every root or the approver keys is taken, never silently", async () => {
  const root = await generateSigningKeyPair();
  const approver = await generateSigningKeyPair();
  const held = enc({ version: 1, command_signing_roots: [pk(root, "r")], approver_keys: [pk(approver, "a")] });
  const bundle = enc({ version: 2, unbatched_destructive_per_hour: 3 });
  const d = await takeTrustBundle(held, {
    signed_trust_bundle: { bundle, signature: await signEnvelope(await worker(root), "trust-bundle", bundle) },
  }, NOW);
  assert.equal(d.action, "take");
  assert.ok(d.action === "take");
  assert.deepEqual(d.bytes, bundle, "the exact signed bytes are kept");
  assert.equal(d.warnings.length, 3);
  assert.match(d.warnings.join("; "), /removes every command-signing root/);
  assert.match(d.warnings.join("; "), /removes 1 of 1 approver keys/);
  assert.match(d.warnings.join("; "), /raises unbatched destructive commands per hour from 0 to 3/);
});
