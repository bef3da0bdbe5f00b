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
