import assert from "node:assert/strict";
import { libvirtOwnershipFacts, probeDomainType, qemuConfDynamicOwnership, qemuConfUser } from "./host_setup.ts";

Deno.test("probeDomainType() reports TCG when QEMU quits before it is asked to (a broken KVM aborts at once)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-probe-" });
  try {
    // A QEMU that closes its stdin and fails straight away, as QEMU does when it cannot set a vCPU's MSRs: the probe's
    // "quit" then meets a closed pipe. Many runs, so that the probe's write lands after the exit in some of them.
    const qemu = `${dir}/qemu`;
    await Deno.writeTextFile(qemu, "#!/bin/sh\nexec 0<&-\necho 'error: failed to set MSR 0x10a' >&2\nexit 134\n");
    await Deno.chmod(qemu, 0o755);
    for (let i = 0; i < 40; i++) {
      const r = await probeDomainType({ kvmDevice: "/dev/null", qemu });
      assert.equal(r.type, "qemu");
      assert.match(r.why, /exit 134: error: failed to set MSR/);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("qemuConfDynamicOwnership() reads libvirt's qemu.conf setting: the last assignment, comments passed over, unset when none", async (t) => {
  const rows: [string, boolean | undefined][] = [
    ["", undefined],
    ["#dynamic_ownership = 0\n", undefined],
    ["dynamic_ownership = 0\n", false],
    ["  dynamic_ownership=1  # relabel\n", true],
    ['dynamic_ownership = 1\nuser = "libvirt-qemu"\ndynamic_ownership = 0\n', false],
    ["remember_owner = 0\n", undefined],
  ];
  for (const [text, want] of rows) {
    await t.step(JSON.stringify(text), () => assert.equal(qemuConfDynamicOwnership(text), want));
  }
});

Deno.test("libvirtOwnershipFacts() reads qemu.conf's dynamic_ownership and user, and asks the host (id -G) whether that user is in the node's group", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-lvown-facts-" });
  try {
    const conf = `${dir}/qemu.conf`;
    assert.equal(qemuConfUser(""), "libvirt-qemu", "Debian's default");
    assert.equal(qemuConfUser('user = "qemu"\n#user = "x"\n'), "qemu");
    // root is in group 0 on every host; a gid no group has holds nobody.
    await Deno.writeTextFile(conf, 'dynamic_ownership = 0\nuser = "root"\n');
    assert.deepEqual(
      await libvirtOwnershipFacts({ dynamicOwnership: false, dataDir: dir, nodeGid: 0, qemuConf: conf }),
      {
        configured: false,
        qemuConf: false,
        qemuUser: "root",
        nodeGid: 0,
        userInGroup: true,
      },
    );
    const off = await libvirtOwnershipFacts({
      dynamicOwnership: false,
      dataDir: dir,
      nodeGid: 2_147_000_000,
      qemuConf: conf,
    });
    assert.equal(off.userInGroup, false);
    await Deno.writeTextFile(conf, 'user = "bcd-no-such-user"\n');
    const unknown = await libvirtOwnershipFacts({ dynamicOwnership: true, dataDir: dir, qemuConf: conf });
    assert.deepEqual([unknown.qemuConf, unknown.userInGroup], [true, null], "unset is libvirt's default 1");
    assert.equal(unknown.nodeGid, (await Deno.lstat(dir)).gid, "without [helper] node_group: the data dir's group");
    const none = await libvirtOwnershipFacts({ dynamicOwnership: true, dataDir: dir, qemuConf: `${dir}/missing.conf` });
    assert.equal(none.qemuConf, null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
