import assert from "node:assert/strict";
import { MAX_REBIND_BUNDLE, parseRebind, RebindMalformed } from "./bundle.ts";
import { bundleBytes, realHostKey } from "./rebind_testing.ts";

const key = await realHostKey();
if (!key) console.log("bundle_test: ssh-keygen is not installed; the host-key rows are skipped");

Deno.test("parseRebind() takes the seed's bundle: account and principal lines, with or without a host key", async (t) => {
  await t.step("without a host key", () => {
    assert.deepEqual(parseRebind(bundleBytes({ v: 1, account: "ubuntu", principals: "exec-r1\nexec-r1-admin" })), {
      account: "ubuntu",
      principals: "exec-r1\nexec-r1-admin\n",
    });
  });
  await t.step({
    name: "with a real ssh-keygen host key and certificate",
    ignore: !key,
    fn: () => {
      const b = parseRebind(bundleBytes({ v: 1, account: "root", principals: "p\n", ...key }));
      assert.equal(b.hostKey, key!.hostKey);
      assert.equal(b.hostCertificate, key!.hostCertificate);
    },
  });
});

Deno.test("parseRebind() refuses a malformed bundle, naming what is wrong (never retried)", async (t) => {
  const ok = { v: 1, account: "ubuntu", principals: "exec-r1" };
  const rows: [string, Uint8Array, RegExp][] = [
    ["larger than its bound", new Uint8Array(MAX_REBIND_BUNDLE + 1), /at most 65536/],
    ["not JSON", new TextEncoder().encode("{v:1"), /not JSON/],
    ["not UTF-8", new Uint8Array([0x7b, 0xff, 0x7d]), /not JSON/],
    ["an array", bundleBytes([] as unknown as Record<string, unknown>), /not a JSON object/],
    ["an unknown key", bundleBytes({ ...ok, shell: "/bin/sh" }), /unknown key "shell"/],
    ["version 2", bundleBytes({ ...ok, v: 2 }), /version is 2/],
    ["no version", bundleBytes({ account: "u", principals: "p" }), /version is undefined/],
    ["an account with a slash", bundleBytes({ ...ok, account: "../root" }), /not an account name/],
    ["principals not a string", bundleBytes({ ...ok, principals: ["p"] }), /not a string/],
    ["an empty principal line", bundleBytes({ ...ok, principals: "a\n\nb" }), /principal line 2/],
    ["a principal with a space", bundleBytes({ ...ok, principals: "a b" }), /principal line 1/],
    ["a host key without its certificate", bundleBytes({ ...ok, hostKey: "x" }), /without its certificate/],
    [
      "a host key that is not PEM",
      bundleBytes({
        ...ok,
        hostKey: "not a key",
        hostCertificate: "ssh-ed25519-cert-v01@openssh.com AAAAAAAAAAAAAAAAAAAA",
      }),
      /not a PEM private key/,
    ],
    [
      "a certificate that is a plain public key",
      bundleBytes({
        ...ok,
        hostKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
        hostCertificate: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx",
      }),
      /not one OpenSSH certificate line/,
    ],
    [
      "a certificate of two lines",
      bundleBytes({
        ...ok,
        hostKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
        hostCertificate: "ssh-ed25519-cert-v01@openssh.com AAAAAAAAAAAAAAAAAAAA\nssh-rsa AAAA",
      }),
      /not one OpenSSH certificate line/,
    ],
  ];
  for (const [name, bytes, want] of rows) {
    await t.step(name, () => {
      assert.throws(() => parseRebind(bytes), (e) => e instanceof RebindMalformed && want.test(e.message));
    });
  }
});
