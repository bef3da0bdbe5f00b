import assert from "node:assert/strict";
import { bcd, encodeMessage, type Props } from "../../proto/mod.ts";
import { EMPTY_TRUST_BUNDLE, signEnvelope } from "../pki/mod.ts";
import { makeTestPki } from "../pki/pki_testing.ts";
import { ed25519Line } from "../access/keys_testing.ts";
import { type HeldDesiredState, type IntakeContext, takeDesiredState } from "./desired_state.ts";

const body = (b: Props<typeof bcd.v1.DesiredStateBody>) => encodeMessage(bcd.v1.DesiredStateBody, b);
const CA = await ed25519Line();
const held: HeldDesiredState = {
  generation: 5,
  specHash: "h5",
  spec: { access: { ssh_ca_keys: [CA], principals: ["root@n-1"] } } as bcd.v1.NodeSpec.$Properties,
  unknownSections: [],
};
const ctx = (over: Partial<IntakeContext> = {}): IntakeContext => ({
  nodeId: "n-1",
  held,
  trust: EMPTY_TRUST_BUNDLE,
  serverNow: Date.now(),
  ...over,
});

/** One row per intake rule: the hostile access section and the reason the refusal names. */
const ROWS: readonly [string, Props<typeof bcd.v1.AccessSection>, string][] = [
  ["a CA key with a control character", { ssh_ca_keys: [`${CA}\nssh-ed25519 AAAA`] }, "control-character"],
  ["two keys on one line", { ssh_ca_keys: [`${CA} ${CA}`] }, "not-one-key"],
  ["a truncated key blob", { ssh_ca_keys: [CA.slice(0, 50)] }, "bad-key-blob"],
  ["a principal with a space", { ssh_ca_keys: [CA], principals: ["root @n-1"] }, "principal-whitespace"],
  ["a principal with a newline", { ssh_ca_keys: [CA], principals: ["root@n-1\nops@n-1"] }, "control-character"],
];

Deno.test("a full spec whose access section breaks a rule is refused whole; the held spec stays", async (t) => {
  for (const [name, access, reason] of ROWS) {
    await t.step(name, async () => {
      const d = await takeDesiredState(
        { body: body({ node_id: "n-1", generation: 6, full: { access, telemetry: { otlp_endpoint: "x" } } }) },
        ctx(),
      );
      assert.equal(d.action, "refuse");
      if (d.action === "refuse") assert.match(d.why, new RegExp(`\\(${reason}\\)`));
    });
  }
});

Deno.test("a patch whose access section breaks a rule is refused like a full spec", async () => {
  const d = await takeDesiredState(
    { body: body({ node_id: "n-1", generation: 6, base_generation: 5, patch: { access: ROWS[1]![1] } }) },
    ctx(),
  );
  assert.equal(d.action, "refuse");
});

Deno.test("a validly signed spec with a hostile access section is refused too (signed or not)", async () => {
  const pki = await makeTestPki();
  const bytes = body({ node_id: "n-1", generation: 7, full: { access: ROWS[3]![1] } });
  const sig = await signEnvelope(pki.worker, "desired-state", bytes);
  const d = await takeDesiredState({ body: bytes, signature: sig }, ctx({ trust: pki.bundle }));
  assert.equal(d.action, "refuse");
  const good = body({ node_id: "n-1", generation: 7, full: { access: { ssh_ca_keys: [CA] } } });
  const ok = await takeDesiredState(
    { body: good, signature: await signEnvelope(pki.worker, "desired-state", good) },
    ctx({ trust: pki.bundle }),
  );
  assert.equal(ok.action, "apply", "the same signer's clean spec applies: the refusal is the section's");
});
