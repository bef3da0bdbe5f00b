import assert from "node:assert/strict";
import {
  check,
  clockCheck,
  configCheck,
  diskCheck,
  DOCTOR_EXIT,
  doctorReport,
  DoctorReportInvalid,
  gatewayCheck,
  helperCheck,
  hostChecks,
  type HostFacts,
  identityCheck,
  journalChecks,
  libvirtOwnershipCheck,
  type LibvirtOwnershipFacts,
  parseDoctorReport,
  releaseCheck,
  renderDoctorText,
  trustCheck,
  WELCOME_BACKWARD_MS,
  worstOf,
} from "./mod.ts";

const FACTS: HostFacts = {
  role: "node",
  kvm: { type: "kvm", why: "/dev/kvm runs a KVM vCPU" },
  hugepageSizesKiB: [2048, 1048576],
  cgroup: { root: "/sys/fs/cgroup", controllers: ["cpuset", "cpu", "memory", "hugetlb", "pids"] },
  tools: { virsh: "9.0.0", "cloud-hypervisor": null, nft: "nftables v1.0.6", sshd: "OpenSSH_9.2" },
  instanceBridges: ["br0"],
  missingBridges: [],
  dataDir: "/var/lib/bcd",
  dataDirFreeBytes: 50 * 1024 ** 3,
};

function statusOf(lines: readonly { name: string; status: string }[], name: string): string | undefined {
  return lines.find((l) => l.name === name)?.status;
}

Deno.test("the worst result decides the exit status: 0 all ok, 4 a warning, 5 a failure", () => {
  const ok = check("a", "ok", "fine");
  const warn = check("b", "warn", "meh", "do this");
  const fail = check("c", "fail", "broken", "do that");
  assert.equal(worstOf([]), "ok");
  assert.equal(DOCTOR_EXIT[worstOf([ok])], 0);
  assert.equal(DOCTOR_EXIT[worstOf([ok, warn])], 4);
  assert.equal(DOCTOR_EXIT[worstOf([warn, fail, ok])], 5);
  assert.throws(() => check("d", "warn", "no hint"), TypeError, "short of ok a line carries a hint");
  assert.deepEqual(check("e", "ok", "fine", "ignored"), { name: "e", status: "ok", detail: "fine" });
});

Deno.test("a report round-trips through its JSON, and its text has one line per check plus a summary", () => {
  const r = doctorReport("node", [
    check("config", "ok", "read /etc/bcd/config.toml"),
    check("helper", "fail", "no helper", "start it"),
    check("runtimes", "warn", "neither virsh nor cloud-hypervisor", "install one"),
  ]);
  assert.deepEqual(parseDoctorReport(JSON.stringify(r)), r);
  const lines = renderDoctorText(r).split("\n");
  assert.equal(lines.length, 4);
  assert.equal(lines[0], "ok   config: read /etc/bcd/config.toml");
  assert.equal(lines[1], "fail helper: no helper — hint: start it");
  assert.equal(lines[3], "bcd-node doctor: 1 ok, 1 warn, 1 fail");
});

Deno.test("parseDoctorReport refuses what is not a report, naming the field", async (t) => {
  const good = { role: "node", worst: "ok", checks: [{ name: "a", status: "ok", detail: "d" }] };
  const rows: [string, unknown, RegExp][] = [
    ["not JSON", "{", /not JSON/],
    ["an unknown field", { ...good, extra: 1 }, /unknown field extra/],
    ["a status outside ok/warn/fail", { ...good, checks: [{ name: "a", status: "bad", detail: "d" }] }, /status/],
    ["a warn without a hint", { ...good, worst: "warn", checks: [{ name: "a", status: "warn", detail: "d" }] }, /hint/],
    ["an ok with a hint", { ...good, checks: [{ name: "a", status: "ok", detail: "d", hint: "h" }] }, /hint/],
    ["a worst that is not the checks' worst", { ...good, worst: "fail" }, /worst/],
    ["too many checks", { ...good, checks: Array(300).fill(good.checks[0]) }, /checks/],
  ];
  for (const [name, doc, re] of rows) {
    await t.step(name, () => {
      assert.throws(() => parseDoctorReport(typeof doc === "string" ? doc : JSON.stringify(doc)), (e) => {
        assert.ok(e instanceof DoctorReportInvalid);
        assert.match(e.message, re);
        return true;
      });
    });
  }
  assert.throws(() => parseDoctorReport(" ".repeat(300 * 1024)), DoctorReportInvalid, "bounded before parsing");
});

Deno.test("host lines: the seed's words for a host with neither runtime, the bridges, KVM, cgroup, nft, sshd", async (t) => {
  await t.step("a healthy VPS host is all ok", () => {
    const lines = hostChecks(FACTS);
    assert.deepEqual(lines.map((l) => l.status), lines.map(() => "ok"), JSON.stringify(lines));
    assert.deepEqual(lines.map((l) => l.name), [
      "runtimes",
      "instance-bridges",
      "kvm",
      "hugepages",
      "cgroup",
      "nft",
      "sshd",
    ]);
  });
  await t.step("neither virsh nor cloud-hypervisor: warn in the seed's words, no bridge or KVM line", () => {
    const lines = hostChecks({ ...FACTS, tools: { ...FACTS.tools, virsh: null } });
    const r = lines.find((l) => l.name === "runtimes")!;
    assert.equal(r.status, "warn");
    assert.equal(r.detail, "neither virsh nor cloud-hypervisor: this host runs no VPS instances");
    assert.equal(statusOf(lines, "instance-bridges"), undefined);
    assert.equal(statusOf(lines, "kvm"), undefined);
  });
  await t.step("[helper] instance_bridges unset: every instance tap is refused", () => {
    const l = hostChecks({ ...FACTS, instanceBridges: [] }).find((x) => x.name === "instance-bridges")!;
    assert.equal(l.status, "warn");
    assert.match(l.detail, /refuses every instance tap/);
    assert.match(l.hint!, /instance_bridges/);
  });
  await t.step("a listed bridge the host lacks", () => {
    const l = hostChecks({ ...FACTS, instanceBridges: ["br0", "br9"], missingBridges: ["br9"] })
      .find((x) => x.name === "instance-bridges")!;
    assert.equal(l.status, "warn");
    assert.match(l.detail, /no bridge br9/);
  });
  await t.step("no working KVM: TCG, warn", () => {
    const l = hostChecks({ ...FACTS, kvm: { type: "qemu", why: "no /dev/kvm" } }).find((x) => x.name === "kvm")!;
    assert.equal(l.status, "warn");
    assert.match(l.detail, /TCG.*no \/dev\/kvm/);
  });
  await t.step("cgroup: v1 only, or a controller missing", () => {
    assert.equal(statusOf(hostChecks({ ...FACTS, cgroup: { root: "/x", controllers: null } }), "cgroup"), "warn");
    const l = hostChecks({ ...FACTS, cgroup: { root: "/x", controllers: ["hugetlb"] } }).find((x) =>
      x.name === "cgroup"
    )!;
    assert.equal(l.status, "warn");
    assert.match(l.detail, /lacks the cpuset, memory controllers/);
  });
  await t.step("no huge page sizes, no nft, no sshd", () => {
    const lines = hostChecks({ ...FACTS, hugepageSizesKiB: [], tools: { ...FACTS.tools, nft: null, sshd: null } });
    assert.equal(statusOf(lines, "hugepages"), "warn");
    assert.equal(statusOf(lines, "nft"), "warn");
    assert.equal(statusOf(lines, "sshd"), "warn");
  });
  await t.step("hugepage sizes are named", () => {
    assert.equal(hostChecks(FACTS).find((l) => l.name === "hugepages")!.detail, "sizes 2M, 1G");
  });
});

Deno.test("disk: fail below the journal's bound, warn below 1 GiB, warn when it cannot be measured", () => {
  const max = 64 * 1024 * 1024;
  assert.equal(diskCheck(FACTS, max).status, "ok");
  assert.equal(diskCheck({ ...FACTS, dataDirFreeBytes: 500 * 1024 * 1024 }, max).status, "warn");
  assert.equal(diskCheck({ ...FACTS, dataDirFreeBytes: 10 * 1024 * 1024 }, max).status, "fail");
  assert.equal(diskCheck({ ...FACTS, dataDirFreeBytes: null }, max).status, "warn");
});

Deno.test("agent lines: config, identity, trust bundle, helper role, journal, clock, gateway", async (t) => {
  await t.step("config", () => {
    assert.equal(configCheck({ path: "/etc/bcd/config.toml" }).status, "ok");
    assert.equal(configCheck({}).detail, "no config file: the defaults");
    const f = configCheck({ error: 'unknown key "gateway.urll"' });
    assert.equal(f.status, "fail");
    assert.match(f.detail, /gateway\.urll/);
  });
  await t.step("identity", () => {
    assert.equal(identityCheck("node", { nodeId: "n1", gatewayUrl: "wss://g" }).status, "ok");
    const m = identityCheck("site", { missing: "/var/lib/bcd-site" });
    assert.equal(m.status, "fail");
    assert.match(m.hint!, /bcd-site join --token/);
    assert.equal(identityCheck("node", { error: "identity.json: public_key is not base64" }).status, "fail");
  });
  await t.step("trust bundle: no command-signing roots is a warning", () => {
    assert.equal(trustCheck({ version: 3, commandSigningRoots: 1, approverKeys: 2 }).status, "ok");
    const w = trustCheck({ version: 0, commandSigningRoots: 0, approverKeys: 0 });
    assert.equal(w.status, "warn");
    assert.match(w.detail, /accepted unsigned/);
    assert.equal(trustCheck({ error: "truncated" }).status, "fail");
  });
  await t.step("helper: down, serving another role, configured for another role, older, fine", () => {
    const down = helperCheck("node", undefined, { socket: "/run/bcd/helper.sock", error: "ENOENT" });
    assert.equal(down.status, "fail");
    assert.match(down.hint!, /bcd-helper serve --socket \/run\/bcd\/helper\.sock/);
    const other = helperCheck("node", undefined, { socket: "/s", serves: "site", facts: true });
    assert.equal(other.status, "fail");
    assert.match(other.detail, /serves the site role, and this is the node role/);
    const cfg = helperCheck("node", "ramdisk", { socket: "/s", serves: "ramdisk", facts: true });
    assert.equal(cfg.status, "fail");
    assert.match(cfg.detail, /\[helper\] role is "ramdisk"/);
    assert.equal(helperCheck("node", undefined, { socket: "/s", serves: "node", facts: false }).status, "warn");
    assert.equal(helperCheck("node", "node", { socket: "/s", serves: "node", facts: true }).status, "ok");
  });
  await t.step("journal: none yet, unreadable, damaged, locked, nearly full", () => {
    const base = {
      dataDir: "/d",
      integrity: "ok",
      lockHolder: null,
      usedEvents: 10,
      maxEvents: 10_000,
      usedBytes: 100,
      maxBytes: 1 << 26,
    };
    assert.deepEqual(journalChecks(base).map((l) => l.status), ["ok", "ok", "ok"]);
    assert.equal(journalChecks({ dataDir: "/d", missing: true })[0]!.status, "warn");
    assert.equal(journalChecks({ dataDir: "/d", error: "file is not a database" })[0]!.status, "fail");
    assert.equal(journalChecks({ ...base, integrity: "row 3 missing from index" })[0]!.status, "fail");
    const locked = journalChecks({ ...base, lockHolder: "pid 42 (incarnation x) since t" })[1]!;
    assert.equal(locked.status, "warn");
    assert.match(locked.detail, /pid 42/);
    assert.equal(journalChecks({ ...base, usedEvents: 9_000 })[2]!.status, "warn");
  });
  await t.step("clock: behind the mark by more than the Welcome allowance fails", () => {
    const now = 1_800_000_000_000;
    assert.equal(clockCheck(now, 0).status, "ok");
    assert.equal(clockCheck(now, now + WELCOME_BACKWARD_MS).status, "ok");
    const f = clockCheck(now, now + WELCOME_BACKWARD_MS + 1000);
    assert.equal(f.status, "fail");
    assert.match(f.hint!, /reset-time-mark/);
  });
  await t.step("gateway: none, unreachable, untrusted certificate, fine", () => {
    assert.equal(gatewayCheck({ url: undefined }).status, "fail");
    const net = gatewayCheck({ url: "wss://g:443", ok: false, tls: true, error: "Connection refused (os error 111)" });
    assert.match(net.hint!, /DNS, routes and firewalls/);
    const tls = gatewayCheck({
      url: "wss://g:443",
      ok: false,
      tls: true,
      error: "invalid peer certificate: UnknownIssuer",
    });
    assert.match(tls.hint!, /ca_file/);
    assert.equal(gatewayCheck({ url: "wss://g:443", ok: true, tls: true }).status, "ok");
  });
});

Deno.test("release line: the release current names, a swap awaiting its confirm, the last rollback", () => {
  const base = { current: "0.2.0", previous: "0.1.0", pending: null, failed: null };
  const ok = releaseCheck("0.2.0", base);
  assert.equal(ok.status, "ok");
  assert.match(ok.detail, /0\.2\.0 \(previous 0\.1\.0\)/);
  assert.equal(releaseCheck("0.1.0", { ...base, current: null }).status, "ok");
  const pending = releaseCheck("0.2.0", { ...base, pending: { version: "0.3.0", previous: "0.2.0", deadlineMs: 0 } });
  assert.equal(pending.status, "warn");
  assert.match(pending.detail, /0\.3\.0 is swapped in/);
  const failed = releaseCheck("0.2.0", {
    ...base,
    failed: { version: "0.3.0", reason: "rolled-back", message: "no Welcome" },
  });
  assert.equal(failed.status, "warn");
  assert.match(failed.detail, /0\.3\.0 was rolled back: no Welcome/);
  assert.equal(releaseCheck("0.2.0", { error: "no releases dir" }).status, "warn");
});

Deno.test("the libvirt-ownership line: the key must match qemu.conf's dynamic_ownership, and under 0 QEMU's user must be in the node's group", async (t) => {
  const group: LibvirtOwnershipFacts = {
    configured: false,
    qemuConf: false,
    qemuUser: "libvirt-qemu",
    nodeGid: 998,
    userInGroup: true,
  };
  const rows: [string, LibvirtOwnershipFacts, string, RegExp][] = [
    [
      "the seed's deployment",
      group,
      "ok",
      /dynamic_ownership = 0: QEMU's user libvirt-qemu is in the node's group \(gid 998\)/,
    ],
    ["libvirt relabels, and the key says so", { ...group, configured: true, qemuConf: true }, "ok", /relabels/],
    ["the key says 0, qemu.conf 1", { ...group, qemuConf: true }, "fail", /qemu.conf says dynamic_ownership = 1/],
    ["the key says 1, qemu.conf 0", { ...group, configured: true }, "fail", /qemu.conf says dynamic_ownership = 0/],
    ["qemu.conf unreadable", { ...group, qemuConf: null }, "warn", /unreadable: not compared/],
    [
      "QEMU's user outside the group",
      { ...group, userInGroup: false },
      "fail",
      /libvirt-qemu is not in the node's group \(gid 998\)/,
    ],
    ["QEMU's user unknown", { ...group, userInGroup: null }, "fail", /libvirt-qemu is unknown to this host/],
  ];
  for (const [what, facts, status, detail] of rows) {
    await t.step(what, () => {
      const l = libvirtOwnershipCheck(facts);
      assert.equal(l.name, "libvirt-ownership");
      assert.equal(l.status, status);
      assert.match(l.detail, detail);
    });
  }
  await t.step("in the host's lines only where virsh is and the helper said", () => {
    assert.equal(statusOf(hostChecks(FACTS), "libvirt-ownership"), undefined);
    assert.equal(
      statusOf(hostChecks({ ...FACTS, libvirtOwnership: { ...group, userInGroup: false } }), "libvirt-ownership"),
      "fail",
    );
    const noVirsh = { ...FACTS, tools: { ...FACTS.tools, virsh: null }, libvirtOwnership: group };
    assert.equal(statusOf(hostChecks(noVirsh), "libvirt-ownership"), undefined);
  });
});
