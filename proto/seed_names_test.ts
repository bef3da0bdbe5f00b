import assert from "node:assert/strict";
import protobuf from "protobufjs";
import { reflectionRoot } from "./_reflect_fill.ts";

// Names that reach the wire keep the seed's spelling (seed 000). One row per name the seed's tables and text give.
const root = reflectionRoot();

const FIELDS: [message: string, fields: string[], source: string][] = [
  [
    "CommandBody",
    [
      "id",
      "node_id",
      "seq",
      "kind",
      "payload",
      "lane",
      "not_after",
      "min_generation",
      "retry_safe",
      "idempotency_key",
      "self_terminating",
      "attested",
      "workflow_id",
      "step_id",
      "traceparent",
      "batch_id",
    ],
    "§The command body table",
  ],
  ["Command", ["body", "signature", "attempt", "batch_approval", "batch_proof"], "§The command body, §quorum"],
  ["CommandUpdate", ["command_id", "state", "error_code", "reason", "boot_id", "result", "node_sig"], "§Results"],
  ["Cancel", ["command_id", "reason"], "§Cancel"],
  ["Ack", ["command_ids", "journal_id", "event_seq"], "§Results, §Events"],
  [
    "DesiredStateBody",
    ["node_id", "generation", "spec_hash", "full", "patch", "base_generation"],
    "§How a spec reaches",
  ],
  ["DesiredState", ["body", "signature"], "§Signed desired state"],
  ["SpecRequest", ["have_generation", "reason"], "§How a spec reaches"],
  [
    "Hello",
    ["applied_generation", "applied_spec_hash", "capabilities", "unacked_results", "journal_id", "boot_id"],
    "§Generations, §journal",
  ],
  ["Welcome", ["server_time", "session_epoch", "trust_bundle"], "§journal, §Dispatch"],
  ["Heartbeat", ["applied_generation", "server_time"], "§Generations, §journal"],
  ["StatusReport", [
    "observed_generation",
    "applied_generation",
    "sections",
    "conditions",
    "instances",
    "instances_complete",
    "volume_storage",
  ], "§Convergence and status"],
  ["SectionStatus", ["state", "generation", "reason", "message"], "§Convergence and status"],
  ["Condition", ["age_ms", "reason"], "§Convergence and status"],
  [
    "VolumeStorage",
    ["total_bytes", "available_bytes", "reserved_bytes", "committed_bytes", "outstanding_bytes"],
    "§Persistent volumes table",
  ],
  ["InstanceStatus", ["identity_rebound_ref"], "§Identity rebind"],
  ["NodeSpec", ["host", "devices", "instances", "access", "telemetry", "daemon", "site"], "§NodeSpec sections table"],
  ["DeviceAssignment", ["binding", "devices", "limits", "env"], "§Device assignments"],
  [
    "ResourceLimits",
    ["cpu_millis", "memory_bytes", "hugepages_1gi", "hugepages_2mi", "cpus", "mems"],
    "§Device assignments",
  ],
  ["InstancesSection", ["instances", "volumes"], "§Persistent volumes"],
  ["InstanceSpec", [
    "runtime",
    "placement",
    "volumes",
    "restore_from",
    "identity_rebind_ref",
    "network_policy",
    "ssh_from_host_only",
  ], "§Instances"],
  ["SiteSection", ["cache_images", "proxy_targets"], "§NodeSpec sections, §Signed commands"],
  ["CacheImage", ["url", "sha256", "format"], "§NodeSpec sections"],
  ["DaemonSection", ["version", "url", "sha256", "signature"], "§NodeSpec sections"],
  ["EventBatch", ["journal_id", "events"], "§Events"],
  ["Event", ["seq", "event_class"], "§Events, §journal"],
  ["NodeRebootResult", ["previous_boot_id", "rebooted"], "§Duplicates and crash recovery"],
  ["GpuResetPayload", ["gpu_uuids"], "§gpu.reset"],
  ["GpuResetOutcome", ["reset", "message", "healthy"], "§gpu.reset"],
  ["SiteHttpProxyPayload", ["target_node_id"], "§Signed commands"],
  ["InstanceSnapshotPayload", ["include_memory"], "§Instances"],
];

const ENUMS: [enumName: string, values: string[], source: string][] = [
  ["SpecRequest.Reason", ["PATCH_BASE_MISMATCH", "MIN_GENERATION", "NO_SPEC"], "§How a spec reaches, reasons table"],
  ["SectionStatus.State", ["CONVERGED", "PROGRESSING", "FAILED", "UNSUPPORTED"], "§Convergence and status"],
  ["CommandUpdate.State", ["ACKED", "RUNNING", "SUCCEEDED", "FAILED", "REJECTED", "CANCELLED"], "§Results"],
  ["DeviceAssignment.Binding", ["BINDING_HOLD", "BINDING_KUBERNETES"], "§Device assignments"],
  ["InstanceSpec.State", ["RUNNING", "PAUSED", "STOPPED", "DELETED"], "§Instances"],
  ["InstanceSpec.NetworkPolicy", ["PRIVATE", "NONE", "EGRESS"], "§Instances"],
  ["InstanceStatus.State", ["ERROR"], "§Instances"],
  ["Event.Class", ["METRIC", "TRANSITION", "RESULT"], "§The journal"],
];

Deno.test("message fields keep the seed's spelling", async (t) => {
  for (const [message, fields, source] of FIELDS) {
    await t.step(`${message} (${source})`, () => {
      const type = root.lookupType(`bcd.v1.${message}`);
      for (const f of fields) assert.ok(type.fields[f], `bcd.v1.${message} has no field ${f}`);
    });
  }
});

Deno.test("enum values keep the seed's spelling", async (t) => {
  for (const [name, values, source] of ENUMS) {
    await t.step(`${name} (${source})`, () => {
      const e = root.lookupEnum(`bcd.v1.${name}`);
      for (const v of values) assert.ok(v in e.values, `bcd.v1.${name} has no value ${v}`);
    });
  }
});

Deno.test("NodeSpec section field numbers follow the seed's section order (SectionUnsupported names the number)", () => {
  const type = root.lookupType("bcd.v1.NodeSpec");
  const order = ["host", "devices", "instances", "access", "telemetry", "daemon", "site"];
  assert.deepEqual(order.map((s) => type.fields[s]?.id), [1, 2, 3, 4, 5, 6, 7]);
  for (const s of order) assert.ok(type.fields[s]?.resolvedType instanceof protobuf.Type, s);
});
