/**
 * Wire costs against JSON as the anchor, measured in the same run: a NodeSpec of 64 device holds and 100 instances
 * (the delivery issue's convergence benchmark spec). `deno task bench:proto` (`deno bench bench/wire_bench.ts`) prints each group's ratios.
 *
 * The `runtime …` groups run bcd's classes (compiled from the descriptor by `proto/classes.ts`) on bcd's protobuf
 * runtime (`proto/runtime/`) against `pbjs`'s static code for the same schema (`proto/gen/bcd_static.js`, what bcd ran
 * before issue 24's fourth stop) on protobufjs/minimal (the runtime before issue 24, the anchor), for the NodeSpec and
 * for a Hello frame: bcd's own classes and runtime must not be slower.
 */
import { bcd } from "../proto/gen/bcd.js";
import { onProtobufjs } from "../proto/runtime/_on_protobufjs.ts";
import { canonicalNodeSpecJson, nodeSpecFromJson, nodeSpecToJson } from "../proto/canonical_json.ts";
import { checkMessageBudget } from "../proto/message_budget.ts";
import { decodeMessage, encodeMessage } from "../proto/wire.ts";

const spec: bcd.v1.NodeSpec.$Properties = {
  devices: {
    assignments: Array.from({ length: 64 }, (_, i) => ({
      allocation_id: `alloc-${i}`,
      reservation_id: `res-${i}`,
      binding: bcd.v1.DeviceAssignment.Binding.BINDING_HOLD,
      devices: [{ class: "gpu.mig", id: `GPU-${i % 8}-0000-0000-0000-000000000000/gi${i % 7}/ci0` }],
      env: [`TEAM=t${i}`],
      limits: { cpu_millis: 8000, memory_bytes: 64 * 2 ** 30, hugepages_1gi: 4, cpus: "0-15", mems: "0" },
    })),
  },
  instances: {
    instances: Array.from({ length: 100 }, (_, i) => ({
      id: `inst-${i}`,
      allocation_id: `alloc-v${i}`,
      runtime: "libvirt-kvm",
      state: bcd.v1.InstanceSpec.State.RUNNING,
      vcpus: 4,
      memory_bytes: 8 * 2 ** 30,
      disk_bytes: 100 * 2 ** 30,
      image: { url: `https://images.example/ubuntu-${i % 3}.qcow2`, sha256: "ab".repeat(32), format: "qcow2" },
      nics: [{ mac: "02:00:00:00:00:01", bridge: "br0", ipam_addresses: [`10.0.${i}.2/24`] }],
      network_policy: bcd.v1.InstanceSpec.NetworkPolicy.PRIVATE,
      ssh_from_host_only: true,
      user_data_ref: `ud-${i}`,
    })),
  },
  access: { ssh_ca_keys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI user-ca"], principals: ["root@node-1"] },
};

const bytes = encodeMessage(bcd.v1.NodeSpec, spec);
const jsonText = canonicalNodeSpecJson(spec);
const decoded = decodeMessage(bcd.v1.NodeSpec, bytes);

Deno.bench({ name: "JSON.parse of the spec's canonical JSON (anchor)", group: "decode", baseline: true }, () => {
  JSON.parse(jsonText);
});
Deno.bench({ name: "decodeMessage(NodeSpec)", group: "decode" }, () => {
  decodeMessage(bcd.v1.NodeSpec, bytes);
});
Deno.bench({ name: "checkMessageBudget(NodeSpec) alone (part of decodeMessage)", group: "decode" }, () => {
  checkMessageBudget("bcd.v1.NodeSpec", bytes);
});
Deno.bench({ name: "nodeSpecFromJson (strict check + fromObject)", group: "decode" }, () => {
  nodeSpecFromJson(JSON.parse(jsonText));
});

Deno.bench({ name: "JSON.stringify of the spec object (anchor)", group: "encode", baseline: true }, () => {
  JSON.stringify(spec);
});
Deno.bench({ name: "encodeMessage(NodeSpec)", group: "encode" }, () => {
  encodeMessage(bcd.v1.NodeSpec, decoded);
});
Deno.bench({ name: "canonicalNodeSpecJson", group: "encode" }, () => {
  canonicalNodeSpecJson(decoded);
});
Deno.bench({ name: "nodeSpecToJson (no key sort)", group: "encode" }, () => {
  nodeSpecToJson(decoded);
});

type Cls = { encode(m: unknown): { finish(): Uint8Array }; decode(b: Uint8Array): unknown };
const before = (await onProtobufjs()).bcd as { v1: Record<string, Cls> };
const hello = bcd.v1.NodeFrame.encode({
  hello: {
    node_id: "node-1",
    role: "node",
    journal_id: "j-1",
    boot_id: "b-1",
    applied_generation: 42,
    capabilities: ["devices.limits", "binding.kubernetes"],
    challenge_sig: new Uint8Array(64).fill(7),
  },
}).finish();
const helloDecoded = bcd.v1.NodeFrame.decode(hello);
for (
  const [what, ours, theirs, body, value] of [
    ["NodeSpec", bcd.v1.NodeSpec as unknown as Cls, before.v1.NodeSpec!, bytes, decoded],
    ["NodeFrame hello", bcd.v1.NodeFrame as unknown as Cls, before.v1.NodeFrame!, hello, helloDecoded],
  ] as const
) {
  Deno.bench(
    {
      name: `${what}.decode, static code on protobufjs/minimal (anchor)`,
      group: `runtime decode ${what}`,
      baseline: true,
    },
    () => {
      theirs.decode(body);
    },
  );
  Deno.bench({ name: `${what}.decode, bcd's classes on bcd's runtime`, group: `runtime decode ${what}` }, () => {
    ours.decode(body);
  });
  Deno.bench(
    {
      name: `${what}.encode, static code on protobufjs/minimal (anchor)`,
      group: `runtime encode ${what}`,
      baseline: true,
    },
    () => {
      theirs.encode(value).finish();
    },
  );
  Deno.bench({ name: `${what}.encode, bcd's classes on bcd's runtime`, group: `runtime encode ${what}` }, () => {
    ours.encode(value).finish();
  });
}
