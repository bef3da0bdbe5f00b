import assert from "node:assert/strict";
import { bcd, encodeMessage, type Props } from "../../proto/mod.ts";
import { EMPTY_TRUST_BUNDLE, signEnvelope } from "../pki/mod.ts";
import { makeTestPki } from "../pki/pki_testing.ts";
import { heldFromJournal, takeDesiredState } from "./desired_state.ts";
import { extendProvenance, MAX_CHAIN_ENTRIES, verifyHeldSpec } from "./spec_provenance.ts";

const body = (b: Props<typeof bcd.v1.DesiredStateBody>) => encodeMessage(bcd.v1.DesiredStateBody, b);

Deno.test("verifyHeldSpec(): the journal's spec is enforced at start only when its signature chains to the held roots", async (t) => {
  const NOW = Date.UTC(2027, 0, 1);
  const pki = await makeTestPki({ notBefore: NOW - 10 * 3_600_000, notAfter: NOW - 3_600_000 });
  const other = await makeTestPki();
  const bytes = body({ node_id: "n-1", generation: 7, spec_hash: "h7", full: { telemetry: {} } });
  const signed = await signEnvelope(pki.worker, "desired-state", bytes);
  const rows: { name: string; trust: typeof pki.bundle; sig?: Uint8Array; bytes?: Uint8Array; ok: boolean }[] = [
    { name: "no roots held: anything is enforced (v0.1)", trust: EMPTY_TRUST_BUNDLE, ok: true },
    {
      name: "signed by a worker of the held root (its certificate expired since) is enforced",
      trust: pki.bundle,
      sig: signed,
      ok: true,
    },
    { name: "unsigned (a merged patch, or taken without roots) is not", trust: pki.bundle, ok: false },
    { name: "signed under a root no longer held is not", trust: other.bundle, sig: signed, ok: false },
    {
      name: "a signature over other bytes is not",
      trust: pki.bundle,
      sig: signed,
      bytes: body({ node_id: "n-1", generation: 8, full: {} }),
      ok: false,
    },
    { name: "a malformed envelope is not", trust: pki.bundle, sig: new Uint8Array([1, 2, 3]), ok: false },
  ];
  for (const r of rows) {
    await t.step(r.name, async () => {
      const why = await verifyHeldSpec(
        { bytes: r.bytes ?? bytes, ...(r.sig ? { signature: r.sig } : {}) },
        r.trust,
        NOW,
        "n-1",
      );
      if (r.ok) assert.equal(why, undefined);
      else assert.ok(typeof why === "string" && why.length > 0);
    });
  }
});

Deno.test("a patched spec journals its provenance chain; verifyHeldSpec() rebuilds it and refuses a tampered one", async () => {
  const NOW = Date.UTC(2027, 0, 1);
  const pki = await makeTestPki();
  const other = await makeTestPki();
  const trust = pki.bundle;
  const full = body({ node_id: "n-1", generation: 1, spec_hash: "h1", full: { telemetry: {}, host: { units: [] } } });
  const fullSig = await signEnvelope(pki.worker, "desired-state", full);
  let record = { bytes: full, signature: fullSig as Uint8Array | undefined };
  let held = heldFromJournal(full, "n-1")!;
  const patches: { bytes: Uint8Array; sig: Uint8Array }[] = [];
  for (const [g, endpoint] of [[2, "https://a"], [3, "https://b"]] as const) {
    const p = body({
      node_id: "n-1",
      generation: g,
      base_generation: g - 1,
      spec_hash: `h${g}`,
      patch: { telemetry: { otlp_endpoint: endpoint } },
    });
    const sig = await signEnvelope(pki.worker, "desired-state", p);
    patches.push({ bytes: p, sig });
    const d = await takeDesiredState({ body: p, signature: sig }, { nodeId: "n-1", held, trust, serverNow: NOW });
    assert.ok(d.action === "apply" && d.patch);
    const chain = extendProvenance(record, d.patch.bytes, d.patch.signature);
    assert.ok(chain, "a signed patch on a signed spec extends the provenance");
    record = { bytes: d.bytes, signature: chain };
    held = d.held;
  }
  assert.equal(await verifyHeldSpec(record, trust, NOW, "n-1"), undefined, "the chain rebuilds the journaled spec");
  assert.match((await verifyHeldSpec(record, other.bundle, NOW, "n-1"))!, /provenance entry 0/);
  assert.match((await verifyHeldSpec(record, trust, NOW, "n-2"))!, /does not start from a full spec for this node/);
  const wrongBytes = body({ node_id: "n-1", generation: 3, spec_hash: "h3", full: { telemetry: {} } });
  assert.match(
    (await verifyHeldSpec({ bytes: wrongBytes, signature: record.signature }, trust, NOW, "n-1"))!,
    /does not rebuild the journaled spec/,
  );
  // A chain that skips a patch does not apply: generation 3 is a patch on 2, not on 1.
  const skipping = extendProvenance({ bytes: full, signature: fullSig }, patches[1]!.bytes, patches[1]!.sig)!;
  assert.match((await verifyHeldSpec({ bytes: record.bytes, signature: skipping }, trust, NOW, "n-1"))!, /entry 1/);
});

Deno.test("extendProvenance(): nothing for an unsigned patch or an unsigned held spec, nor past the chain's bound", async () => {
  const pki = await makeTestPki();
  const full = body({ node_id: "n-1", generation: 1, full: {} });
  const sig = await signEnvelope(pki.worker, "desired-state", full);
  const p = body({ node_id: "n-1", generation: 2, base_generation: 1, patch: {} });
  const psig = await signEnvelope(pki.worker, "desired-state", p);
  assert.equal(extendProvenance({ bytes: full, signature: sig }, p, undefined), undefined);
  assert.equal(extendProvenance({ bytes: full }, p, psig), undefined);
  assert.equal(extendProvenance(undefined, p, psig), undefined);
  let rec = { bytes: full, signature: sig as Uint8Array | undefined };
  for (let i = 1; i < MAX_CHAIN_ENTRIES; i++) {
    rec = { bytes: p, signature: extendProvenance(rec, p, psig) };
    assert.ok(rec.signature, `entry ${i + 1} fits`);
  }
  assert.equal(extendProvenance(rec, p, psig), undefined, `entry ${MAX_CHAIN_ENTRIES + 1} does not`);
  assert.equal(await verifyHeldSpec({ bytes: full }, EMPTY_TRUST_BUNDLE, 0, "n-1"), undefined, "no roots: enforced");
});
