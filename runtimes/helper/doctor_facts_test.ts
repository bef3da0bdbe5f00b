import assert from "node:assert/strict";
import { HelperError } from "../../core/helper/mod.ts";
import { freeBytes, hugepageSizes, RealHostDoctor } from "./doctor_facts.ts";
import { startTestHelper } from "./helper_testing.ts";

async function put(path: string, text: string): Promise<void> {
  await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  await Deno.writeTextFile(path, text);
}

Deno.test("host.doctor reads huge page sizes, bridges and cgroup controllers from the roots it is given", async () => {
  const root = await Deno.makeTempDir({ prefix: "bcd-doctor-facts-" });
  try {
    for (const s of ["hugepages-2048kB", "hugepages-1048576kB", "not-a-size"]) {
      await Deno.mkdir(`${root}/sys/kernel/mm/hugepages/${s}`, { recursive: true });
    }
    await Deno.mkdir(`${root}/sys/class/net/br0/bridge`, { recursive: true });
    await Deno.mkdir(`${root}/sys/class/net/eth0`, { recursive: true });
    await put(`${root}/cgroup/cgroup.controllers`, "cpuset cpu io memory hugetlb pids\n");
    await Deno.mkdir(`${root}/data`);
    let probed = 0;
    const doctor = new RealHostDoctor({
      role: "site",
      dataDir: `${root}/data`,
      cgroupRoot: `${root}/cgroup`,
      bridges: ["br0", "eth0", "br9"],
      sys: `${root}/sys`,
      kvm: () => (probed++, Promise.resolve({ type: "qemu", why: "no /dev/kvm" })),
    });
    const f = await doctor.facts();
    assert.equal(f.role, "site");
    assert.deepEqual(f.hugepageSizesKiB, [2048, 1048576]);
    assert.deepEqual(f.cgroup, {
      root: `${root}/cgroup`,
      controllers: ["cpuset", "cpu", "io", "memory", "hugetlb", "pids"],
    });
    assert.deepEqual(f.missingBridges, ["eth0", "br9"], "eth0 is an interface but no bridge");
    assert.ok(typeof f.dataDirFreeBytes === "number" && f.dataDirFreeBytes > 0);
    assert.equal(
      probed,
      f.tools.virsh !== null || f.tools["cloud-hypervisor"] !== null ? 1 : 0,
      "KVM probed only with a runtime",
    );
    const none = await new RealHostDoctor({
      role: "node",
      dataDir: `${root}/nope`,
      cgroupRoot: `${root}/nope`,
      bridges: [],
      sys: `${root}/nope`,
      kvm: () => Promise.resolve({ type: "qemu", why: "not probed in this test" }),
    }).facts();
    assert.deepEqual(none.hugepageSizesKiB, []);
    assert.equal(none.cgroup.controllers, null);
    assert.equal(none.dataDirFreeBytes, null);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("host.doctor on this machine agrees with what the machine says (sysfs, the tools on PATH, stat -f)", async () => {
  const sizes = await hugepageSizes("/sys");
  const listed = [...Deno.readDirSync("/sys/kernel/mm/hugepages")].map((e) => Number(/(\d+)kB/.exec(e.name)?.[1]));
  assert.deepEqual(sizes, listed.sort((a, b) => a - b));
  const free = await freeBytes("/var/tmp");
  const df = new TextDecoder().decode(
    (await new Deno.Command("df", { args: ["-B1", "--output=avail", "/var/tmp"], stdout: "piped" }).output()).stdout,
  ).trim().split("\n")[1]!.trim();
  // Both read the same statfs; other tests write meanwhile, so they agree within 1 GiB.
  assert.ok(free !== null && Math.abs(free - Number(df)) < 1024 ** 3, `stat -f ${free} vs df ${df}`);
  const f = await new RealHostDoctor({
    role: "node",
    dataDir: "/var/tmp",
    cgroupRoot: "/sys/fs/cgroup",
    bridges: [],
    kvm: () => Promise.resolve({ type: "qemu", why: "not probed in this test" }),
  }).facts();
  for (const [tool, args] of [["nft", "--version"], ["sshd", "-V"], ["virsh", "--version"]] as const) {
    const out = await new Deno.Command("sh", { args: ["-c", `command -v ${tool} >/dev/null && ${tool} ${args}`] })
      .output();
    assert.equal(f.tools[tool] !== null, out.success, `${tool}: ${f.tools[tool]}`);
  }
});

Deno.test("the host.doctor op: answered through the helper for every role, refusing arguments; no backend fails", async () => {
  const facts = {
    role: "ramdisk" as const,
    kvm: { type: "qemu" as const, why: "x" },
    hugepageSizesKiB: [],
    cgroup: { root: "/c", controllers: null },
    tools: { virsh: null, "cloud-hypervisor": null, nft: null, sshd: null },
    instanceBridges: [],
    missingBridges: [],
    dataDir: "/d",
    dataDirFreeBytes: null,
  };
  const h = await startTestHelper({ role: "ramdisk", doctor: { facts: () => Promise.resolve(facts) } });
  try {
    assert.deepEqual(await h.client.call("host.doctor", {}), facts);
    await assert.rejects(
      h.client.call("host.doctor", { path: "/etc" } as never),
      (e) => e instanceof HelperError && e.code === "unknown-field",
    );
  } finally {
    await h.close();
  }
  const bare = await startTestHelper();
  try {
    await assert.rejects(bare.client.call("host.doctor", {}), (e) => e instanceof HelperError && e.code === "failed");
  } finally {
    await bare.close();
  }
});
