import assert from "node:assert/strict";
import { loggedArgs } from "./log_args.ts";

Deno.test("loggedArgs(): an op's arguments as they are, nft.apply's policy as counts and a digest", () => {
  assert.deepEqual(loggedArgs({ id: 1, op: "gpu.reset", args: { gpuUuid: "GPU-1" } }), { gpuUuid: "GPU-1" });
  const nic = {
    instance: "i-1",
    index: 0,
    bridge: "br0",
    policy: "none" as const,
    sshFromHostOnly: false,
    mac: "52:54:00:00:00:01",
    addresses: ["10.0.3.7/24"],
  };
  const policy = { nics: [nic, { ...nic, index: 1 }] };
  const a = loggedArgs({ id: 2, op: "nft.apply", args: { policy } }) as Record<string, unknown>;
  assert.equal(a.nics, 2);
  assert.equal(a.instances, 1);
  assert.match(String(a.sha256), /^[0-9a-f]{64}$/);
  assert.deepEqual(loggedArgs({ id: 3, op: "nft.apply", args: { policy: structuredClone(policy) } }), a);
});

Deno.test("loggedArgs(): access.apply's files as counts and a digest, not 20,000 serials on one log line", () => {
  const files = {
    caKeys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH"],
    principals: [{ account: "ops", principals: ["ops@n1"] }, { account: "root", principals: ["root@n1"] }],
    revokedSerials: Array.from({ length: 20_000 }, (_, i) => i + 1),
  };
  const a = loggedArgs({ id: 4, op: "access.apply", args: files }) as Record<string, unknown>;
  assert.deepEqual({ ...a, sha256: undefined }, {
    caKeys: 1,
    accounts: 2,
    principals: 2,
    revokedSerials: 20_000,
    sha256: undefined,
  });
  assert.match(String(a.sha256), /^[0-9a-f]{64}$/);
  assert.ok(JSON.stringify(a).length < 200);
});

Deno.test("loggedArgs(): kube.join's bootstrap token is never logged, the join's settings are", () => {
  const args = {
    apiServerEndpoint: "10.0.0.1:6443",
    caCertHashes: [`sha256:${"ab".repeat(32)}`],
    labels: {},
    taints: [],
    token: "abcdef.0123456789abcdef",
  };
  const a = loggedArgs({ id: 5, op: "kube.join", args });
  assert.deepEqual(a, { ...args, token: "<redacted>" });
  assert.doesNotMatch(JSON.stringify(a), /0123456789abcdef/);
});
