/**
 * `bcd-node doctor` and `bcd-site doctor` as an operator runs them: real processes under the agent's own flags beside
 * a real `bcd-helper` (its `host.doctor` op) on this machine, joined to the testbed gateway, and then on setups the
 * test breaks on purpose: the journal locked by a running daemon, the helper down, the config naming another role,
 * no instance runtime (the fixture's `virsh` is missing) and then one (a `virsh` stub answering its version), a TLS
 * gateway whose CA this host does not trust. Each failure is named with its hint; `--json` parses back.
 */
import assert from "node:assert/strict";
import { type DoctorReport, parseDoctorReport, renderDoctorText } from "../core/doctor/mod.ts";
import { TestbedGateway } from "../fixtures/testbed/gateway.ts";
import { AgentWithHelper } from "../fixtures/testbed/node_helper.ts";
import { makeCerts } from "../runtimes/host/certs_testing.ts";
import { qemuConfDynamicOwnership } from "../runtimes/libvirt/host_setup.ts";

async function doctor(
  a: AgentWithHelper,
  extra: string[] = [],
  config = a.config,
): Promise<{ code: number; r: DoctorReport; text: string }> {
  const j = await a.runCli(["doctor", "--config", config, "--json", ...extra]);
  const r = parseDoctorReport(j.stdout.trim());
  return { code: j.code, r, text: renderDoctorText(r) };
}

function line(r: DoctorReport, name: string) {
  const l = r.checks.find((c) => c.name === name);
  assert.ok(l, `no ${name} line in:\n${renderDoctorText(r)}`);
  return l;
}

Deno.test("bcd-node doctor on this machine beside a real helper, then with the journal locked, the helper down, the wrong role", async (t) => {
  const gw = await TestbedGateway.start({ dispatchEveryMs: 100 });
  const node = await AgentWithHelper.start(gw, { cpuOnly: false });
  try {
    await gw.until(() => gw.nodes.get(node.nodeId)?.session, "the session");

    await t.step(
      "journal locked by the running daemon: a warning naming its holder; the rest as this host is",
      async () => {
        const { code, r, text } = await doctor(node);
        assert.equal(line(r, "config").status, "ok");
        assert.equal(line(r, "identity").status, "ok");
        assert.match(line(r, "identity").detail, new RegExp(node.nodeId));
        assert.equal(line(r, "trust-bundle").status, "warn", "the testbed gateway signs nothing by default");
        assert.equal(line(r, "helper").status, "ok");
        assert.equal(line(r, "journal").status, "ok");
        const lock = line(r, "journal.lock");
        assert.equal(lock.status, "warn");
        assert.match(lock.detail, /pid \d+/);
        assert.match(lock.hint!, /second daemon refuses to start/);
        assert.equal(line(r, "gateway").status, "ok", text);
        assert.equal(line(r, "clock").status, "ok");
        assert.equal(line(r, "disk").status === "fail", false, text);
        const rt = line(r, "runtimes");
        assert.equal(rt.status, "warn", "the fixture's virsh is not there");
        assert.equal(rt.detail, "neither virsh nor cloud-hypervisor: this host runs no VPS instances");
        // The host lines agree with this machine.
        const sizes = [...Deno.readDirSync("/sys/kernel/mm/hugepages")].length;
        assert.equal(line(r, "hugepages").status, sizes > 0 ? "ok" : "warn");
        assert.equal(line(r, "nvidia-smi").status, "ok");
        assert.equal(r.worst, "warn");
        assert.equal(code, 4, "the worst is a warning");
        const plain = await node.runCli(["doctor", "--config", node.config]);
        assert.equal(plain.code, 4);
        assert.deepEqual(
          plain.stdout.trim().split("\n").map((l) => l.split(":")[0]),
          text.split("\n").map((l) => l.split(":")[0]),
          "the text and the JSON are the same lines",
        );
      },
    );

    await t.step("the daemon stopped: the lock is free", async () => {
      await node.stopAgent();
      const { r } = await doctor(node);
      assert.equal(line(r, "journal.lock").status, "ok");
    });

    await t.step("the config names another role for the helper: fail, naming both roles", async () => {
      const wrong = `${node.dataDir}/wrong-role.toml`;
      await Deno.writeTextFile(wrong, (await Deno.readTextFile(node.config)).replace('role = "node"', 'role = "site"'));
      const { code, r } = await doctor(node, [], wrong);
      const h = line(r, "helper");
      assert.equal(h.status, "fail");
      assert.match(h.detail, /\[helper\] role is "site", and this is the node role/);
      assert.match(h.hint!, /role = "node"/);
      assert.equal(code, 5);
    });

    await t.step(
      "the helper down: fail with the command to start it; the host lines are missing, the rest still runs",
      async () => {
        await node.stopHelper();
        const { code, r } = await doctor(node);
        const h = line(r, "helper");
        assert.equal(h.status, "fail");
        assert.match(h.hint!, new RegExp(`bcd-helper serve --socket ${node.socket}`));
        assert.equal(r.checks.find((c) => c.name === "runtimes"), undefined);
        assert.equal(line(r, "journal").status, "ok");
        assert.equal(code, 5);
      },
    );
  } finally {
    await node.stop();
    await gw.stop();
  }
});

Deno.test("bcd-node doctor with a runtime: virsh answers, [helper] instance_bridges unset warns, KVM is probed", async () => {
  const gw = await TestbedGateway.start({ dispatchEveryMs: 100 });
  const node = await AgentWithHelper.start(gw, { libvirt: "empty" });
  try {
    await node.stopAgent();
    const { r } = await doctor(node);
    assert.equal(line(r, "runtimes").status, "ok");
    assert.match(line(r, "runtimes").detail, /virsh 9\.0\.0/);
    const br = line(r, "instance-bridges");
    assert.equal(br.status, "warn");
    assert.match(br.detail, /refuses every instance tap/);
    assert.ok(["ok", "warn"].includes(line(r, "kvm").status));
    assert.equal(line(r, "qemu-img").status === "fail", false, "qemu-img is installed here (the image tests need it)");
    // The testbed's helper says libvirt relabels (libvirt_dynamic_ownership = true), as this machine's qemu.conf does
    // unless it sets dynamic_ownership = 0.
    const conf = await Deno.readTextFile("/etc/libvirt/qemu.conf").catch((e) => {
      if (e instanceof Deno.errors.NotFound) return "";
      throw e;
    });
    const own = line(r, "libvirt-ownership");
    if (qemuConfDynamicOwnership(conf) === false) assert.equal(own.status, "fail", own.detail);
    else {assert.deepEqual([own.status, own.detail], [
        "ok",
        "dynamic_ownership = 1: libvirt relabels the domains' files",
      ]);}
  } finally {
    await node.stop();
    await gw.stop();
  }
});

const certs = await makeCerts();
if (certs === null) console.error("doctor_cli_test: openssl is not installed; the TLS gateway test is ignored");

Deno.test({
  name: "bcd-site doctor: a TLS gateway whose CA is not trusted fails with the ca_file hint, and passes once it is",
  ignore: certs === null,
  async fn() {
    const pem = certs!; // ignored above when openssl is missing
    const gw = await TestbedGateway.start({ dispatchEveryMs: 100 });
    const site = await AgentWithHelper.start(gw, { role: "site" });
    const tls = Deno.serve(
      { port: 0, hostname: "127.0.0.1", cert: pem.cert, key: pem.key, onListen() {} },
      () => new Response("not a gateway", { status: 404 }),
    );
    try {
      await site.stopAgent();
      const url = `wss://127.0.0.1:${tls.addr.port}/v1/session`;
      const bad = await doctor(site, ["--gateway", url]);
      const g = line(bad.r, "gateway");
      assert.equal(g.status, "fail");
      assert.match(g.detail, /UnknownIssuer/);
      assert.match(g.hint!, /ca_file/);
      assert.equal(line(bad.r, "helper").status, "ok", "the site's helper serves the site role");
      assert.equal(bad.r.checks.find((c) => c.name === "runtimes"), undefined, "a site runs no instances");
      const ca = `${site.dataDir}/ca.pem`;
      await Deno.writeTextFile(ca, pem.ca);
      const withCa = `${site.dataDir}/with-ca.toml`;
      await Deno.writeTextFile(
        withCa,
        (await Deno.readTextFile(site.config)).replace("[devices]", `[gateway]\nca_file = "${ca}"\n[devices]`),
      );
      const good = await doctor(site, ["--gateway", url], withCa);
      assert.equal(line(good.r, "gateway").status, "ok");
      assert.match(line(good.r, "gateway").detail, /TLS certificate verified/);
    } finally {
      await tls.shutdown();
      await site.stop();
      await gw.stop();
    }
  },
});
