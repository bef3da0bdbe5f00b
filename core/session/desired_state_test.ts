import assert from "node:assert/strict";
import { bcd, encodeMessage, type Props } from "../../proto/mod.ts";
import { EMPTY_TRUST_BUNDLE, signEnvelope } from "../pki/mod.ts";
import { makeTestPki } from "../pki/pki_testing.ts";
import {
  type HeldDesiredState,
  heldFromJournal,
  type IntakeContext,
  takeDesiredState,
  unknownSpecSections,
} from "./desired_state.ts";

const body = (b: Props<typeof bcd.v1.DesiredStateBody>) => encodeMessage(bcd.v1.DesiredStateBody, b);
const held: HeldDesiredState = {
  generation: 5,
  specHash: "h5",
  spec: {
    devices: { assignments: [{ allocation_id: "a-1" }] },
    telemetry: { otlp_endpoint: "https://otlp.example" },
    access: { principals: ["ops@n-1"] },
  } as bcd.v1.NodeSpec.$Properties,
  unknownSections: [],
};
const ctx = (over: Partial<IntakeContext> = {}): IntakeContext => ({
  nodeId: "n-1",
  held,
  trust: EMPTY_TRUST_BUNDLE,
  serverNow: Date.now(),
  ...over,
});

Deno.test("a body for another node, or a generation not above the held one, is ignored", async () => {
  const other = await takeDesiredState({ body: body({ node_id: "n-2", generation: 9, full: {} }) }, ctx());
  assert.equal(other.action, "ignore");
  for (const g of [4, 5]) {
    const d = await takeDesiredState({ body: body({ node_id: "n-1", generation: g, full: {} }) }, ctx());
    assert.equal(d.action, "ignore", `generation ${g}`);
  }
});

Deno.test("a full spec applies and its spec_hash is echoed as sent, never recomputed", async () => {
  const bytes = body({ node_id: "n-1", generation: 6, spec_hash: "not-a-real-hash", full: { telemetry: {} } });
  const d = await takeDesiredState({ body: bytes }, ctx());
  assert.equal(d.action, "apply");
  if (d.action !== "apply") return;
  assert.equal(d.held.specHash, "not-a-real-hash");
  assert.deepEqual(d.bytes, bytes, "the received bytes are journaled");
  assert.equal(heldFromJournal(d.bytes, "n-1")?.generation, 6);
});

Deno.test("once the bundle holds command-signing roots, only validly signed specs apply ('always' rule)", async (t) => {
  const pki = await makeTestPki();
  const other = await makeTestPki();
  const bytes = body({ node_id: "n-1", generation: 99, full: {} });
  const signed = ctx({ trust: pki.bundle });
  await t.step("unsigned, high generation: refused", async () => {
    assert.equal((await takeDesiredState({ body: bytes }, signed)).action, "refuse");
  });
  await t.step("signed by a key of another root: refused", async () => {
    const sig = await signEnvelope(other.worker, "desired-state", bytes);
    assert.equal((await takeDesiredState({ body: bytes, signature: sig }, signed)).action, "refuse");
  });
  await t.step("a command signature over the same bytes: refused", async () => {
    const sig = await signEnvelope(pki.worker, "command", bytes);
    assert.equal((await takeDesiredState({ body: bytes, signature: sig }, signed)).action, "refuse");
  });
  await t.step("signed over other bytes: refused", async () => {
    const sig = await signEnvelope(pki.worker, "desired-state", body({ node_id: "n-1", generation: 98, full: {} }));
    assert.equal((await takeDesiredState({ body: bytes, signature: sig }, signed)).action, "refuse");
  });
  await t.step("validly signed: applies", async () => {
    const sig = await signEnvelope(pki.worker, "desired-state", bytes);
    const d = await takeDesiredState({ body: bytes, signature: sig }, signed);
    assert.equal(d.action, "apply");
  });
});

Deno.test("a patch against the wrong base asks for the full spec", async () => {
  const d = await takeDesiredState(
    { body: body({ node_id: "n-1", generation: 7, base_generation: 4, patch: { telemetry: {} } }) },
    ctx(),
  );
  assert.equal(d.action, "request");
  const none = await takeDesiredState(
    { body: body({ node_id: "n-1", generation: 7, base_generation: 0, patch: {} }) },
    ctx({ held: undefined }),
  );
  assert.equal(none.action, "request");
});

Deno.test("a patch replaces each section it sets wholesale, an empty section clears it, unset sections stay", async () => {
  const d = await takeDesiredState({
    body: body({
      node_id: "n-1",
      generation: 6,
      base_generation: 5,
      spec_hash: "h6",
      patch: { devices: { assignments: [{ allocation_id: "a-2" }] }, telemetry: {} },
    }),
  }, ctx());
  assert.equal(d.action, "apply");
  if (d.action !== "apply") return;
  const spec = heldFromJournal(d.bytes, "n-1")!.spec;
  assert.deepEqual(spec.devices?.assignments?.map((a) => a.allocation_id), ["a-2"]);
  assert.equal(spec.telemetry?.otlp_endpoint ?? "", "", "the empty telemetry section cleared it");
  assert.deepEqual(spec.access?.principals, ["ops@n-1"], "access was not in the patch and stays");
  assert.equal(d.signature, undefined);
});

Deno.test("an undecodable body is refused, not a crash", async () => {
  const d = await takeDesiredState({ body: new Uint8Array([0x0a, 0xff, 0x01]) }, ctx());
  assert.equal(d.action, "refuse");
});

/** A NodeSpec field `field` (wire type 2) carrying `payload`, as a newer control plane would encode it. */
const lenField = (field: number, payload: Uint8Array) => new Uint8Array([(field << 3) | 2, payload.length, ...payload]);
/** A DesiredStateBody whose spec (field 4 full, 5 patch) is `known` plus the raw `extra` records. */
function bodyWith(
  b: Props<typeof bcd.v1.DesiredStateBody>,
  specField: 4 | 5,
  known: Props<typeof bcd.v1.NodeSpec>,
  extra: Uint8Array[],
) {
  const spec = new Uint8Array([...encodeMessage(bcd.v1.NodeSpec, known), ...extra.flatMap((e) => [...e])]);
  return new Uint8Array([...body(b), (specField << 3) | 2, spec.length, ...spec]);
}
const SECTION_9 = lenField(9, new Uint8Array([0x0a, 0x02, 0x68, 0x69])); // a message with a string "hi"
const SECTION_12_EMPTY = lenField(12, new Uint8Array());

Deno.test("NodeSpec fields this build does not know are held by field number, with their emptiness, and journaled", async () => {
  const bytes = bodyWith({ node_id: "n-1", generation: 6, spec_hash: "h6" }, 4, { telemetry: {} }, [
    SECTION_9,
    SECTION_12_EMPTY,
  ]);
  const d = await takeDesiredState({ body: bytes }, ctx());
  assert.equal(d.action, "apply");
  if (d.action !== "apply") return;
  const want = [{ field: 9, empty: false }, { field: 12, empty: true }];
  assert.deepEqual(d.held.unknownSections.map(({ field, empty }) => ({ field, empty })), want);
  const back = heldFromJournal(d.bytes, "n-1")!;
  assert.deepEqual(back.unknownSections.map(({ field, empty }) => ({ field, empty })), want, "a restart knows them");
  assert.deepEqual(
    heldFromJournal(body({ node_id: "n-1", generation: 6, full: { telemetry: {} } }), "n-1")!
      .unknownSections,
    [],
  );
});

Deno.test("a patch replaces an unknown section wholesale like a known one, and the merged spec journals it", async () => {
  const base = bodyWith({ node_id: "n-1", generation: 5, spec_hash: "h5" }, 4, {}, [
    SECTION_9,
    lenField(10, new Uint8Array([0x08, 0x01])),
  ]);
  const held5 = heldFromJournal(base, "n-1")!;
  const patch = bodyWith({ node_id: "n-1", generation: 6, base_generation: 5, spec_hash: "h6" }, 5, {
    telemetry: { otlp_endpoint: "https://otlp.example" },
  }, [lenField(9, new Uint8Array())]);
  const d = await takeDesiredState({ body: patch }, ctx({ held: held5 }));
  assert.equal(d.action, "apply");
  if (d.action !== "apply") return;
  const want = [{ field: 9, empty: true }, { field: 10, empty: false }];
  assert.deepEqual(d.held.unknownSections.map(({ field, empty }) => ({ field, empty })), want);
  const back = heldFromJournal(d.bytes, "n-1")!;
  assert.deepEqual(back.unknownSections.map(({ field, empty }) => ({ field, empty })), want);
  assert.equal(back.spec.telemetry?.otlp_endpoint, "https://otlp.example");
  assert.equal(back.generation, 6);
});

Deno.test("unknownSpecSections merges repeated occurrences of a field and refuses malformed bytes", () => {
  const bytes = bodyWith({ node_id: "n-1", generation: 1 }, 4, {}, [
    SECTION_12_EMPTY,
    SECTION_9,
    lenField(9, new Uint8Array()),
  ]);
  const u = unknownSpecSections(bytes);
  assert.deepEqual(u.map(({ field, empty }) => ({ field, empty })), [{ field: 9, empty: false }, {
    field: 12,
    empty: true,
  }]);
  assert.equal(u[0]!.records.length, SECTION_9.length + 2);
  assert.throws(() => unknownSpecSections(new Uint8Array([0x22, 0x03, 0x4a, 0x05, 0x00])), /runs past/);
});
