import assert from "node:assert/strict";
import { CH_LINES, LIBVIRT_LINES, VALID_ARGS } from "./args_samples_testing.ts";
import { kindsForRole } from "../commands/kinds.ts";
import { decodeRequest, RequestRefused } from "./request.ts";
import { HELPER_OPS, type HelperOp } from "./protocol.ts";
import { DEFAULT_HELPER_ROLE, HELPER_OPS_BY_ROLE, HELPER_ROLES, isHelperRole, opsOfRole } from "./roles.ts";

/** The module's table, row by row: the ops each role's helper answers. */
const TABLE: Record<string, readonly HelperOp[]> = {
  node: HELPER_OPS.filter((op) => !op.startsWith("disk.") && !op.startsWith("kexec.")),
  site: [
    "host.boot_id",
    "host.inventory",
    "host.doctor",
    "node.reboot",
    "plugin.list",
    "plugin.manifest",
    "plugin.attach",
    "daemon.status",
    "daemon.install",
    "daemon.confirm",
  ],
  ramdisk: [
    "host.boot_id",
    "host.inventory",
    "host.doctor",
    "pci.numa_node",
    "dcgm.diag",
    "plugin.list",
    "plugin.manifest",
    "plugin.attach",
    "disk.wipe",
    "disk.wipe_status",
    "disk.wipe_cancel",
    "disk.deploy",
    "kexec.load",
    "kexec.exec",
  ],
};

/** A well-formed request line of every op (arguments that pass the default-deny table). */
const LINE: Record<HelperOp, string> = {
  "host.boot_id": "{}",
  "host.inventory": "{}",
  "host.memory": "{}",
  "host.memory_pressure": "{}",
  "host.doctor": "{}",
  "daemon.status": "{}",
  "daemon.install":
    '{"version":"0.2.0","sha256":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","signature":""}',
  "daemon.confirm": '{"version":"0.2.0"}',
  "pci.numa_node": '{"pciBusId":"0000:18:00.0"}',
  "holds.list": "{}",
  "file.write": '{"kind":"allocation-env","allocationId":"a1","env":["BCD_ALLOCATION_ID=a1"]}',
  "file.remove": '{"kind":"cdi","allocationId":"a1"}',
  "slice.apply": '{"name":"bcd-alloc-a1.slice","settings":{}}',
  "slice.remove": '{"name":"bcd-alloc-a1.slice"}',
  "slice.list": "{}",
  "slice.usage": '{"name":"bcd-alloc-a1.slice"}',
  "gpu.reset": '{"gpuUuid":"GPU-6f2a1c3e-3b1e-4f0a-9f3c-0d1e2f3a4b5c"}',
  "dcgm.diag": '{"level":2,"gpuUuids":["GPU-6f2a1c3e-3b1e-4f0a-9f3c-0d1e2f3a4b5c"]}',
  "node.reboot": '{"reason":"kernel update"}',
  "nft.apply": '{"policy":{"nics":[]}}',
  "nft.list": "{}",
  "sysctl.read": '{"keys":[]}',
  "sysctl.apply": '{"steps":[{"op":"restore","key":"vm.swappiness"}]}',
  "hugepages.read": "{}",
  "hugepages.apply": '{"steps":[{"op":"restore","size":"2M"}]}',
  "modules.read": "{}",
  "mig.read": "{}",
  "sharing.read": "{}",
  "sharing.apply": '{"steps":[{"op":"mps-stop"}]}',
  "mig.apply": '{"steps":[{"op":"create","gpu":"GPU-6f2b3c1a-91d4-5e0b-8a7c-2d9e4f1b0c31","profile":"1g.10gb"}]}',
  "package.read": '{"unit":"nvidia-driver","package":"nvidia-driver"}',
  "package.apply": '{"unit":"fabric-manager","package":"nvidia-fabricmanager","steps":[{"op":"service"}]}',
  "modules.apply": '{"steps":[{"op":"drop","name":"overlay","unload":false}]}',
  "kube.read": "{}",
  "kube.join": JSON.stringify(VALID_ARGS["kube.join"]),
  "kube.reset": "{}",
  "plugin.list": "{}",
  "plugin.manifest": '{"name":"redfish"}',
  "plugin.attach": '{"name":"redfish"}',
  ...LIBVIRT_LINES,
  ...CH_LINES,
  "access.observe": "{}",
  "disk.wipe": '{"diskId":"nvme-Samsung_SSD_980_S64DNX0R","pattern":"zero","verify":"sample"}',
  "disk.wipe_status": '{"diskId":"nvme-Samsung_SSD_980_S64DNX0R"}',
  "disk.wipe_cancel": '{"diskId":"nvme-Samsung_SSD_980_S64DNX0R"}',
  "disk.deploy": `{"diskId":"nvme-Samsung_SSD_980_S64DNX0R","url":"https://images.example/os.raw","sha256":"${
    "ab".repeat(32)
  }","format":"raw"}`,
  "kexec.load": JSON.stringify(VALID_ARGS["kexec.load"]),
  "kexec.exec": "{}",
  "access.apply":
    '{"caKeys":["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcH"],"principals":[{"account":"root","principals":["root@n1"]}],"revokedSerials":[5]}',
};

Deno.test("each role's helper answers exactly its row of the table; the default is the node's", () => {
  assert.deepEqual([...HELPER_ROLES], Object.keys(TABLE));
  for (const role of HELPER_ROLES) assert.deepEqual([...HELPER_OPS_BY_ROLE[role]], [...TABLE[role]!], role);
  assert.equal(DEFAULT_HELPER_ROLE, "node");
  assert.ok(isHelperRole("ramdisk") && !isHelperRole("guest") && !isHelperRole("sim") && !isHelperRole(""));
});

Deno.test("disk.* ops are a helper's only where the role registers disk.wipe", () => {
  for (const role of HELPER_ROLES) {
    const hasKind = kindsForRole(role).some((k) => k.kind === "disk.wipe");
    for (const op of ["disk.wipe", "disk.wipe_status", "disk.wipe_cancel", "disk.deploy"] as const) {
      assert.equal(opsOfRole(role).has(op), hasKind, `${role} ${op}`);
    }
  }
});

Deno.test("kexec.* ops are a helper's only where the role registers boot.kexec", () => {
  for (const role of HELPER_ROLES) {
    const hasKind = kindsForRole(role).some((k) => k.kind === "boot.kexec");
    for (const op of ["kexec.load", "kexec.exec"] as const) {
      assert.equal(opsOfRole(role).has(op), hasKind, `${role} ${op}`);
    }
  }
});

Deno.test("node.reboot is a helper op only of the roles that register the node.reboot kind", () => {
  for (const role of HELPER_ROLES) {
    const hasKind = kindsForRole(role).some((k) => k.kind === "node.reboot");
    assert.equal(opsOfRole(role).has("node.reboot"), hasKind, role);
  }
});

Deno.test("a request of an op outside the served role is refused not-allowed, before its arguments are read", async (t) => {
  for (const role of HELPER_ROLES) {
    const allowed = opsOfRole(role);
    for (const op of HELPER_OPS) {
      await t.step(`${role} ${op}`, () => {
        const line = `{"id":3,"op":"${op}","args":${LINE[op]}}`;
        if (allowed.has(op)) {
          assert.equal(decodeRequest(line, allowed).op, op);
          return;
        }
        assert.throws(() => decodeRequest(line, allowed), (e) => {
          assert.ok(e instanceof RequestRefused);
          assert.equal(e.id, 3);
          assert.equal(e.error.code, "not-allowed");
          assert.match(e.error.message, new RegExp(`^helper: ${op.replace(".", "\\.")} is not an op of the role`));
          return true;
        });
        // Arguments that would be refused are not looked at: the op is refused first.
        assert.throws(
          () => decodeRequest(`{"id":4,"op":"${op}","args":{"path":"/etc/shadow"}}`, allowed),
          (e) => e instanceof RequestRefused && e.error.code === "not-allowed",
        );
      });
    }
  }
  assert.throws(
    () => decodeRequest('{"id":5,"op":"exec"}', opsOfRole("site")),
    (e) => e instanceof RequestRefused && e.error.code === "unknown-op",
    "an op the protocol lacks is still unknown-op",
  );
});
