/**
 * The `Virsh` contract, run against the fake and against the real `virsh` on a libvirtd this test starts (domains of
 * type `qemu`, TCG). Without root, libvirtd or QEMU the real run is skipped with the reason printed.
 */
import assert from "node:assert/strict";
import { ensureLibvirtd, type LibvirtdHandle } from "../../fixtures/libvirt/libvirtd.ts";
import { FakeVirsh } from "./fake_virsh.ts";
import { CommandVirsh, parseVirshList, type Virsh, VirshError, type VirshErrorCode } from "./virsh.ts";

const uuids = new Map<string, string>();

function tinyDomain(name: string): string {
  const uuid = uuids.get(name) ?? crypto.randomUUID();
  uuids.set(name, uuid);
  return `<domain type='qemu'><name>${name}</name><uuid>${uuid}</uuid><memory unit='MiB'>32</memory><vcpu>1</vcpu>` +
    `<os><type arch='x86_64'>hvm</type></os><devices><memballoon model='none'/></devices></domain>`;
}

async function rejectsWith(p: Promise<unknown>, code: VirshErrorCode): Promise<void> {
  await assert.rejects(p, (e) => e instanceof VirshError && e.code === code);
}

async function stateOf(v: Virsh, name: string) {
  return (await v.list()).find((d) => d.name === name)?.state;
}

function contract(make: () => Promise<{ virsh: Virsh; done(): Promise<void> } | { skip: string }>, label: string) {
  let handle: { virsh: Virsh; done(): Promise<void> } | { skip: string } | undefined;
  const get = async () => handle ??= await make();
  Deno.test(`Virsh contract (${label}): define, start, suspend, resume, destroy and undefine move a domain through its states`, async (t) => {
    const h = await get();
    if ("skip" in h) {
      console.log(`skipped: ${h.skip}`);
      t.step({ name: `skipped: ${h.skip}`, ignore: true, fn: () => {} });
      return;
    }
    const v = h.virsh;
    const name = `bcd-ct-${crypto.randomUUID().slice(0, 8)}`;
    try {
      assert.equal(await v.define(tinyDomain(name)), name);
      assert.equal(await stateOf(v, name), "stopped");
      assert.match(await v.dumpxml(name), new RegExp(`<name>${name}</name>`));
      await t.step("a second define of the same name and uuid redefines it; another uuid is invalid", async () => {
        assert.equal(await v.define(tinyDomain(name)), name);
        assert.equal((await v.list()).filter((d) => d.name === name).length, 1);
        await rejectsWith(v.define(tinyDomain(name).replace(uuids.get(name)!, crypto.randomUUID())), "invalid");
      });
      await t.step("start runs it; a second start is invalid", async () => {
        await v.start(name, false);
        assert.equal(await stateOf(v, name), "running");
        await rejectsWith(v.start(name, false), "invalid");
      });
      await t.step("suspend pauses, resume runs again", async () => {
        await v.suspend(name);
        assert.equal(await stateOf(v, name), "paused");
        await v.resume(name);
        assert.equal(await stateOf(v, name), "running");
      });
      await t.step("destroy stops it; destroying a stopped domain is invalid", async () => {
        await v.destroy(name);
        assert.equal(await stateOf(v, name), "stopped");
        await rejectsWith(v.destroy(name), "invalid");
        await rejectsWith(v.blockresize(name, "vda", 1 << 30), "invalid");
      });
      await t.step("start --paused leaves it paused", async () => {
        await v.start(name, true);
        assert.equal(await stateOf(v, name), "paused");
        await v.destroy(name);
      });
      await t.step("undefine removes a stopped domain", async () => {
        await v.undefine(name);
        assert.equal(await stateOf(v, name), undefined);
      });
    } finally {
      if (await stateOf(v, name) === "running" || await stateOf(v, name) === "paused") await v.destroy(name);
      if (await stateOf(v, name) !== undefined) await v.undefine(name);
    }
  });
  Deno.test(`Virsh contract (${label}): an unknown domain is no-domain and a broken definition invalid`, async (t) => {
    const h = await get();
    if ("skip" in h) {
      t.step({ name: `skipped: ${h.skip}`, ignore: true, fn: () => {} });
      return;
    }
    const v = h.virsh;
    const ghost = `bcd-ct-none-${crypto.randomUUID().slice(0, 8)}`;
    await rejectsWith(v.start(ghost, false), "no-domain");
    await rejectsWith(v.dumpxml(ghost), "no-domain");
    await rejectsWith(v.undefine(ghost), "no-domain");
    await rejectsWith(v.define("<domain type='qemu'><name>x</name>"), "invalid");
    await h.done();
  });
}

contract(() => Promise.resolve({ virsh: new FakeVirsh(), done: () => Promise.resolve() }), "fake");
contract(async () => {
  const d: LibvirtdHandle = await ensureLibvirtd();
  if ("skip" in d) return d;
  return { virsh: new CommandVirsh({ uri: d.uri }), done: () => d.stop() };
}, "real libvirtd, type qemu");

Deno.test("parseVirshList() reads virsh's table and folds its states", () => {
  const text = ` 1    web-1   running\n 2    b       paused\n -    c       shut off\n -    d       in shutdown\n`;
  assert.deepEqual(parseVirshList(text), [
    { name: "b", state: "paused" },
    { name: "c", state: "stopped" },
    { name: "d", state: "running" },
    { name: "web-1", state: "running" },
  ]);
  assert.throws(() => parseVirshList(" 1 x weird-state\n"), VirshError);
});
