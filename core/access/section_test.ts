import assert from "node:assert/strict";
import { AccessSpecInvalid, checkAccessSection, ownPrincipals } from "./section.ts";
import { parseSshPublicKey, SshKeyError } from "./ssh_public_key.ts";
import { b64, caught, ed25519Line, p256Line, rsaLine, sshBlob, sshString } from "./keys_testing.ts";

const ED = await ed25519Line();
const ED_B64 = ED.split(" ")[1]!;
const P256 = await p256Line();
const raw32 = new Uint8Array(32).fill(7);

Deno.test("parseSshPublicKey() reads real Ed25519, ECDSA P-256 and RSA key lines", () => {
  assert.deepEqual(parseSshPublicKey(ED).type, "ssh-ed25519");
  assert.deepEqual(parseSshPublicKey(ED).comment, "ca@test");
  assert.deepEqual(parseSshPublicKey(P256).type, "ecdsa-sha2-nistp256");
  assert.deepEqual(parseSshPublicKey(rsaLine(2048)).type, "ssh-rsa");
});

/** One row per rule of the CA key: the line, and the reason it is refused with. */
const KEY_ROWS: readonly [string, string, string][] = [
  ["a newline inside the line (adds a second line)", `${ED}\nssh-ed25519 ${ED_B64}`, "control-character"],
  ["a carriage return", `${ED}\r`, "control-character"],
  ["a NUL", `ssh-ed25519\u0000 ${ED_B64}`, "control-character"],
  ["a tab", `ssh-ed25519\t${ED_B64}`, "control-character"],
  ["a C1 control (NEL)", `${ED} \u0085x`, "control-character"],
  ["a Unicode line separator", `${ED}\u2028`, "control-character"],
  ["two keys on one line", `${ED} ${ED}`, "not-one-key"],
  ["a second key's blob in the comment", `ssh-ed25519 ${ED_B64} ${ED_B64}`, "not-one-key"],
  ["a type with no blob", "ssh-ed25519", "not-one-key"],
  ["an empty line", "", "not-one-key"],
  ["an authorized_keys option in front", `cert-authority ${ED}`, "unknown-key-type"],
  ["a certificate, not a key", `ssh-ed25519-cert-v01@openssh.com ${ED_B64}`, "unknown-key-type"],
  ["a DSA key", `ssh-dss ${ED_B64}`, "unknown-key-type"],
  ["a blob that is not base64", "ssh-ed25519 AAAA!!!!", "bad-key-blob"],
  [
    "a truncated key blob",
    `ssh-ed25519 ${b64(sshBlob(sshString("ssh-ed25519"), sshString(raw32)).subarray(0, 40))}`,
    "bad-key-blob",
  ],
  [
    "a length past the blob's end",
    `ssh-ed25519 ${b64(sshBlob(sshString("ssh-ed25519"), new Uint8Array([0, 0, 1, 0]), raw32))}`,
    "bad-key-blob",
  ],
  ["a blob whose type differs from the line's", `ssh-rsa ${ED_B64}`, "bad-key-blob"],
  [
    "an Ed25519 key of 31 bytes",
    `ssh-ed25519 ${b64(sshBlob(sshString("ssh-ed25519"), sshString(raw32.subarray(1))))}`,
    "bad-key-blob",
  ],
  [
    "bytes after the last field",
    `ssh-ed25519 ${b64(sshBlob(sshString("ssh-ed25519"), sshString(raw32), new Uint8Array(4)))}`,
    "bad-key-blob",
  ],
  [
    "an ECDSA key naming another curve",
    `ecdsa-sha2-nistp256 ${
      b64(sshBlob(sshString("ecdsa-sha2-nistp256"), sshString("nistp384"), sshString(new Uint8Array(97).fill(4))))
    }`,
    "bad-key-blob",
  ],
  [
    "a compressed ECDSA point",
    `ecdsa-sha2-nistp256 ${
      b64(sshBlob(sshString("ecdsa-sha2-nistp256"), sshString("nistp256"), sshString(new Uint8Array(65).fill(2))))
    }`,
    "bad-key-blob",
  ],
  ["a 512-bit RSA modulus", rsaLine(512), "bad-key-blob"],
  ["a line past the length bound", `ssh-ed25519 ${ED_B64} ${"x".repeat(9000)}`, "not-one-key"],
];

Deno.test("parseSshPublicKey() refuses each hostile key line with its rule's reason", async (t) => {
  for (const [name, line, reason] of KEY_ROWS) {
    await t.step(name, () => {
      const e = caught(() => parseSshPublicKey(line), SshKeyError);
      assert.deepEqual(e.reason, reason, e.message);
    });
  }
});

/** One row per rule of the section: the section, the reason, the field named. */
const SECTION_ROWS: readonly [string, Record<string, unknown>, string, string][] = [
  ["a CA key with a control character", { ssh_ca_keys: [ED, `${ED}\n`] }, "control-character", "ssh_ca_keys[1]"],
  ["two keys on one line", { ssh_ca_keys: [`${ED} ${P256}`] }, "not-one-key", "ssh_ca_keys[0]"],
  ["a truncated key blob", { ssh_ca_keys: [ED.slice(0, 40)] }, "bad-key-blob", "ssh_ca_keys[0]"],
  [
    "a principal with a space",
    { ssh_ca_keys: [ED], principals: ["root@n1", "root @n1"] },
    "principal-whitespace",
    "principals[1]",
  ],
  [
    "a principal with a newline",
    { ssh_ca_keys: [ED], principals: ["root@n1\nadmin@n1"] },
    "control-character",
    "principals[0]",
  ],
  ["a principal with a no-break space", { principals: ["root\u00a0@n1"] }, "principal-whitespace", "principals[0]"],
  ["an empty principal", { principals: [""] }, "principal-whitespace", "principals[0]"],
  ["a principal with DEL", { principals: ["root@n1\u007f"] }, "control-character", "principals[0]"],
  ["too many CA keys", { ssh_ca_keys: new Array(65).fill(ED) }, "too-many", "ssh_ca_keys"],
];

Deno.test("checkAccessSection() refuses the whole section for each rule, naming the field", async (t) => {
  for (const [name, section, reason, field] of SECTION_ROWS) {
    await t.step(name, () => {
      const e = caught(() => checkAccessSection(section), AccessSpecInvalid);
      assert.deepEqual([e.reason, e.field], [reason, field], e.message);
    });
  }
});

Deno.test("checkAccessSection() accepts a section of real keys and one-word principals", () => {
  checkAccessSection({
    exec_ticket_jwks: "",
    ssh_ca_keys: [ED, P256, rsaLine(4096)],
    principals: ["root@n1", "ops@n1", "root@n2"],
    revoked_serials: [1, 2, 99],
  });
  checkAccessSection(undefined);
  checkAccessSection({});
});

Deno.test("ownPrincipals() keeps only <account>@<this node>, grouped by account", () => {
  const r = ownPrincipals(["root@n1", "ops@n1", "root@n2", "n1", "../x@n1", "root@n1", "root@n10"], "n1");
  assert.deepEqual([...r.byAccount], [["ops", ["ops@n1"]], ["root", ["root@n1"]]]);
  assert.deepEqual(r.skipped, 4);
  assert(!r.byAccount.has("../x"));
});
