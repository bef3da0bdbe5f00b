import assert from "node:assert/strict";
import { ConditionSet } from "../converge/conditions.ts";
import { ConvergenceEngine } from "../converge/engine.ts";
import { silentLogger } from "../log/mod.ts";
import { AccessConverger } from "./converger.ts";
import { FAKE_NAMES, FakeAccessHost } from "./fake_host.ts";
import { ed25519Line } from "./keys_testing.ts";

const CA = await ed25519Line();

async function jwksText(): Promise<string> {
  const kp = await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"]) as CryptoKeyPair;
  const jwk = await crypto.subtle.exportKey("jwk", kp.publicKey);
  return JSON.stringify({ keys: [{ ...jwk, kid: "k1", use: "sig" }] });
}

function setup() {
  const host = new FakeAccessHost();
  const conv = new AccessConverger({ host, nodeId: "n1" });
  const engine = new ConvergenceEngine({ convergers: [conv], log: silentLogger(), conditions: new ConditionSet() });
  let gen = 0;
  const pass = async (access: unknown) => {
    engine.hold({ generation: ++gen, specHash: `h${gen}`, sections: access === undefined ? {} : { access } });
    const s = await engine.pass();
    return s.sections.find((x) => x.section === "access")!;
  };
  return { host, conv, pass };
}

Deno.test("the access converger writes the files once, reloads once, and leaves an unchanged pass alone", async () => {
  const { host, pass } = setup();
  const access = { ssh_ca_keys: [CA], principals: ["root@n1", "root@n2"], revoked_serials: [9, 3] };
  assert.equal((await pass(access)).state, "CONVERGED");
  assert.equal(host.reloads, 1);
  assert.equal(host.files.get(FAKE_NAMES.principals("root")), "root@n1\n");
  assert.ok(!host.files.has(FAKE_NAMES.principals("n2")), "another node's principal is not written");
  assert.match(host.files.get(FAKE_NAMES.krlInput)!, /serial: 3\nserial: 9\n$/);
  await pass(access);
  assert.equal(host.reloads, 1, "an unchanged pass reloads nothing");
  await pass({ ...access, revoked_serials: [3, 9, 12] });
  assert.equal(host.reloads, 1, "a new serial rewrites the KRL but not the drop-in");
  assert.match(host.files.get(FAKE_NAMES.krlInput)!, /serial: 12\n$/);
});

Deno.test("an empty or absent access section removes every file and reloads once", async () => {
  const { host, pass } = setup();
  await pass({ ssh_ca_keys: [CA], principals: ["root@n1"] });
  assert.equal((await pass({})).state, "CONVERGED");
  assert.equal(host.files.size, 0);
  assert.equal(host.reloads, 2);
  await pass(undefined);
  await pass({ principals: ["root@n1"] });
  assert.equal(host.reloads, 2, "nothing left to remove: no reload");
});

Deno.test("a failed sshd -t keeps the old files and leaves the section progressing (retried)", async () => {
  const { host, pass } = setup();
  host.failNextCheck = "Bad configuration option";
  const s = await pass({ ssh_ca_keys: [CA], principals: ["root@n1"] });
  assert.equal(s.state, "PROGRESSING");
  assert.match(s.message, /sshd -t/);
  assert.equal(host.files.size, 0);
  assert.equal((await pass({ ssh_ca_keys: [CA], principals: ["root@n1"] })).state, "CONVERGED");
});

Deno.test("a hostile section that slipped past intake fails terminally and changes no file", async () => {
  const { host, pass } = setup();
  await pass({ ssh_ca_keys: [CA], principals: ["root@n1"] });
  const before = new Map(host.files);
  const s = await pass({ ssh_ca_keys: [CA], principals: ["root@n1\nevil@n1"] });
  assert.deepEqual([s.state, s.reason], ["FAILED", "AccessSpecInvalid"]);
  const z = await pass({ ssh_ca_keys: [CA], revoked_serials: [0] });
  assert.deepEqual([z.state, z.reason], ["FAILED", "InvalidRevokedSerial"]);
  assert.deepEqual(host.files, before);
});

Deno.test("the JWKS is taken on every pass, even when no file changes; a bad one fails and holds no key", async () => {
  const { conv, pass } = setup();
  const jwks = await jwksText();
  await pass({ exec_ticket_jwks: jwks });
  await pass({ exec_ticket_jwks: jwks });
  assert.equal(conv.jwks.taken, 2);
  assert.equal(conv.jwks.key("k1")?.alg, "EdDSA");
  const s = await pass({ exec_ticket_jwks: "{not json" });
  assert.deepEqual([s.state, s.reason], ["FAILED", "JwksInvalid"]);
  assert.equal(conv.jwks.key("k1"), undefined);
});
