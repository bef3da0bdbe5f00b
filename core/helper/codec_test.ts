import assert from "node:assert/strict";
import { LIBVIRT_VALID } from "./_libvirt_samples.ts";
import {
  answerError,
  decodeAnswer,
  decodeRequest,
  encodeError,
  encodeRequest,
  encodeResult,
  RequestRefused,
} from "./codec.ts";
import { HelperError } from "./errors.ts";
import { HELPER_OPS, type HelperArgs, type HelperOp } from "./protocol.ts";

const GPU = "GPU-6f2a1c3e-3b1e-4f0a-9f3c-0d1e2f3a4b5c";
const ARGS: { [O in HelperOp]: HelperArgs[O] } = {
  "host.boot_id": {},
  "host.inventory": {},
  "host.memory": {},
  "pci.numa_node": { pciBusId: "00000000:3A:00.0" },
  "holds.list": {},
  "file.write": {
    kind: "cdi",
    allocationId: "a1",
    binding: "hold",
    devices: [{ class: "gpu.slot", atom: `${GPU}/s2`, gpuUuid: GPU, cdiName: `${GPU}_s2`, minorNumber: 3 }],
    env: [`NVIDIA_VISIBLE_DEVICES=${GPU}`, "BCD_ALLOCATION_ID=a1", "BCD_CGROUP_PARENT=bcd-alloc-a1.slice"],
    cgroupParent: "bcd-alloc-a1.slice",
  },
  "file.remove": { kind: "cdi", allocationId: "a1" },
  "slice.apply": {
    name: "bcd-alloc-a1.slice",
    settings: { allowedCpus: "0-3", allowedMemoryNodes: "0", cpuQuotaPercent: 400, memoryMaxBytes: 2 ** 33 },
  },
  "slice.remove": { name: "bcd-alloc-a1.slice" },
  "slice.list": {},
  "slice.usage": { name: "bcd-alloc-a1.slice" },
  "gpu.reset": { gpuUuid: GPU },
  "node.reboot": { reason: "requested by op-17" },
  "nft.apply": {
    policy: {
      nics: [{
        instance: "i-1",
        index: 0,
        bridge: "br0",
        policy: "private",
        sshFromHostOnly: true,
        mac: "52:54:00:00:00:01",
        addresses: ["10.0.3.7/24"],
      }],
    },
  },
  "nft.list": {},
  "sysctl.read": { keys: ["net.ipv4.ip_forward"] },
  "sysctl.apply": {
    steps: [{ op: "set", key: "net.ipv4.ip_forward", value: "1" }, { op: "restore", key: "vm.swappiness" }],
  },
  "hugepages.read": {},
  "hugepages.apply": { steps: [{ op: "set", size: "2M", node: 0, count: 512 }, { op: "restore", size: "1G" }] },
  "modules.read": {},
  "mig.read": {},
  "sharing.read": {},
  "sharing.apply": { steps: [{ op: "restore-compute-mode", gpu: "GPU-6f2b3c1a-91d4-5e0b-8a7c-2d9e4f1b0c31" }] },
  "mig.apply": { steps: [{ op: "create", gpu: "GPU-6f2b3c1a-91d4-5e0b-8a7c-2d9e4f1b0c31", profile: "1g.10gb+me" }] },
  "package.read": { unit: "container-toolkit", package: "nvidia-container-toolkit" },
  "package.apply": {
    unit: "nvidia-driver",
    package: "nvidia-driver",
    steps: [{ op: "install", package: "nvidia-driver", version: "1:550.90.07-1" }],
  },
  "modules.apply": { steps: [{ op: "load", name: "br_netfilter" }, { op: "drop", name: "overlay", unload: true }] },
  ...LIBVIRT_VALID,
  "access.observe": {},
  "access.apply": {
    caKeys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH"],
    principals: [{ account: "root", principals: ["root@n1"] }],
    revokedSerials: [5],
  },
};

Deno.test("every op's request survives encode and decode unchanged, one line each", () => {
  HELPER_OPS.forEach((op, i) => {
    const line = encodeRequest(i, op, ARGS[op]);
    assert.ok(line.endsWith("\n") && !line.slice(0, -1).includes("\n"), `${op} is one line`);
    assert.deepEqual(decodeRequest(line.slice(0, -1)), { id: i, op, args: ARGS[op] }, op);
  });
});

Deno.test("answers: a result and each refusal code round-trip; the node's error says helper:", () => {
  assert.deepEqual(decodeAnswer(encodeResult(7, { bootId: "b" }).trim()), { id: 7, ok: true, result: { bootId: "b" } });
  assert.deepEqual(decodeAnswer(encodeResult(8, undefined).trim()), { id: 8, ok: true, result: {} });
  for (
    const code of [
      "malformed",
      "line-too-long",
      "unknown-op",
      "not-allowed",
      "unknown-field",
      "invalid-argument",
      "busy",
      "failed",
      "unsupported",
    ] as const
  ) {
    const a = decodeAnswer(
      encodeError(code === "line-too-long" ? null : 3, new HelperError(code, `x: ${code}`)).trim(),
    );
    assert.equal(a.ok, false);
    if (a.ok) continue;
    const e = answerError(a);
    assert.equal(e.code, code);
    assert.equal(e.message, `helper: x: ${code}`);
  }
});

/** Request lines the decoder refuses, with the id it still answers to and the code. */
const BAD_REQUESTS: { why: string; line: string; id: number | null; code: string; names?: RegExp }[] = [
  { why: "not JSON", line: "{id: 1}", id: null, code: "malformed" },
  { why: "a list", line: "[1]", id: null, code: "malformed" },
  { why: "no id", line: '{"op":"holds.list"}', id: null, code: "malformed", names: /id/ },
  { why: "a negative id", line: '{"id":-1,"op":"holds.list"}', id: null, code: "malformed" },
  { why: "a fractional id", line: '{"id":1.5,"op":"holds.list"}', id: null, code: "malformed" },
  { why: "a string id", line: '{"id":"1","op":"holds.list"}', id: null, code: "malformed" },
  { why: "no op", line: '{"id":4}', id: 4, code: "malformed", names: /op/ },
  {
    why: "an unknown op",
    line: '{"id":5,"op":"file.read","args":{}}',
    id: 5,
    code: "unknown-op",
    names: /"file.read"/,
  },
  { why: "a shell op", line: '{"id":6,"op":"exec","args":{"cmd":"sh"}}', id: 6, code: "unknown-op", names: /"exec"/ },
  {
    why: "an unknown top-level field",
    line: '{"id":7,"op":"holds.list","as":"root"}',
    id: 7,
    code: "unknown-field",
    names: /field as/,
  },
  {
    why: "an unknown argument",
    line: '{"id":8,"op":"holds.list","args":{"dir":"/"}}',
    id: 8,
    code: "unknown-field",
    names: /args\.dir/,
  },
  {
    why: "a bad argument",
    line: '{"id":9,"op":"gpu.reset","args":{"gpuUuid":"x"}}',
    id: 9,
    code: "invalid-argument",
    names: /gpuUuid "x"/,
  },
];

Deno.test("the request decoder refuses each bad line by name and keeps the id when it can", async (t) => {
  for (const b of BAD_REQUESTS) {
    await t.step(b.why, () => {
      assert.throws(() => decodeRequest(b.line), (e) => {
        assert.ok(e instanceof RequestRefused);
        assert.equal(e.id, b.id);
        assert.equal(e.error.code, b.code);
        if (b.names) assert.match(e.error.message, b.names);
        return true;
      });
    });
  }
});

Deno.test("the answer decoder refuses what is not an answer", () => {
  for (
    const line of [
      "nope",
      "[]",
      '{"id":1}',
      '{"id":1,"ok":true}',
      '{"ok":true,"result":{}}',
      '{"id":1,"ok":false}',
      '{"id":1,"ok":false,"error":{"code":"root","message":"x"}}',
    ]
  ) {
    assert.throws(() => decodeAnswer(line), (e) => e instanceof HelperError && e.code === "malformed", line);
  }
});
