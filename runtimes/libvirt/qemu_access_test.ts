import assert from "node:assert/strict";
import { hostWithDomains, instanceFiles } from "./host_testing.ts";

const NOT_ROOT = Deno.uid() !== 0;
if (NOT_ROOT) console.log("qemu_access_test: the group scheme tests are SKIPPED: they need root to chgrp and chown");

/** A group no file here has: the node's group the tests give QEMU's user. */
const NODE_GROUP = 61_999;

const mode = async (p: string) => (await Deno.lstat(p)).mode! & 0o7777;

/** A host under the group scheme with one domain `d0` that has a seed, a read-write and a read-only volume. */
async function groupHost() {
  const t = await hostWithDomains(0, { options: { qemuAccess: { scheme: "group", gid: NODE_GROUP } } });
  const inst = `${t.dir}/libvirt/instances/d0`;
  await instanceFiles(t.dir, t.plan("d0"));
  await Deno.writeFile(`${inst}/seed.iso`, new Uint8Array(2048), { mode: 0o600 });
  await Deno.mkdir(`${t.dir}/volumes`, { mode: 0o700 });
  for (const v of ["rw", "ro"]) await Deno.writeFile(`${t.dir}/volumes/${v}.raw`, new Uint8Array(0), { mode: 0o600 });
  const plan = {
    ...t.plan("d0"),
    seed: true,
    volumes: [
      { id: "rw", serial: "rw", readOnly: false, dev: "vdb" },
      { id: "ro", serial: "ro", readOnly: true, dev: "vdc" },
    ],
  };
  return { ...t, inst, plan };
}

Deno.test({
  name:
    "under dynamic_ownership = 0 a start opens the domain's files to the node's group (0660, read-only 0640) and the directories to group search; a destroy closes them again (0600)",
  ignore: NOT_ROOT,
  fn: async () => {
    const { dir, host, inst, plan } = await groupHost();
    try {
      const dirs = [dir, `${dir}/libvirt`, `${dir}/libvirt/images`, `${dir}/libvirt/instances`, inst, `${dir}/volumes`];
      for (const d of dirs) await Deno.chmod(d, 0o700);
      assert.deepEqual(await host.define(plan), {});
      for (const d of dirs) {
        const st = await Deno.lstat(d);
        assert.deepEqual([d, st.mode! & 0o777, st.gid], [d, 0o710, NODE_GROUP], "group search, never read, never o+x");
      }
      assert.equal(await mode(`${inst}/disk.qcow2`), 0o600, "a define alone opens no file");
      assert.deepEqual(await host.start("d0", false), {});
      const files: [string, number][] = [
        [`${inst}/disk.qcow2`, 0o660],
        [`${inst}/seed.iso`, 0o640],
        [`${dir}/volumes/rw.raw`, 0o660],
        [`${dir}/volumes/ro.raw`, 0o640],
      ];
      for (const [f, m] of files) {
        const st = await Deno.lstat(f);
        assert.deepEqual([f, st.mode! & 0o7777, st.gid], [f, m, NODE_GROUP]);
      }
      const base = (await Array.fromAsync(Deno.readDir(`${dir}/libvirt/images`)))[0]!.name;
      assert.equal(await mode(`${dir}/libvirt/images/${base}`), 0o644, "the base image stays the image store's");
      assert.deepEqual(await host.destroy("d0"), {});
      for (const [f] of files) assert.deepEqual([f, await mode(f)], [f, 0o600], "closed again once stopped");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "under dynamic_ownership = 0 a domain that stops by itself has its disk and seed closed by the next listing",
  ignore: NOT_ROOT,
  fn: async () => {
    const { dir, host, virsh, inst, plan } = await groupHost();
    try {
      assert.deepEqual(await host.define(plan), {});
      assert.deepEqual(await host.start("d0", false), {});
      await host.list();
      assert.equal(await mode(`${inst}/disk.qcow2`), 0o660);
      await virsh.shutdown("d0"); // the guest powers off: no destroy through bcd
      await host.list();
      assert.equal(await mode(`${inst}/disk.qcow2`), 0o600);
      assert.equal(await mode(`${inst}/seed.iso`), 0o600);
      assert.equal(await mode(`${dir}/volumes/rw.raw`), 0o600);
      assert.deepEqual(await host.start("d0", false), {}, "a start opens them again");
      assert.equal(await mode(`${inst}/disk.qcow2`), 0o660);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "under dynamic_ownership = 0 root opens nothing to QEMU's group that is not the node's own plain file: a link, another owner's file, a hard link are refused bad-disk and left as they were",
  ignore: NOT_ROOT,
  fn: async () => {
    const { dir, host, inst, plan } = await groupHost();
    const elsewhere = await Deno.makeTempDir({ prefix: "bcd-lvhost-elsewhere-" });
    try {
      assert.deepEqual(await host.define(plan), {});
      const secret = `${elsewhere}/secret`;
      await Deno.writeTextFile(secret, "root's\n", { mode: 0o600 });
      // A seed swapped for a link to root's file after the define's checks.
      await Deno.remove(`${inst}/seed.iso`);
      await Deno.symlink(secret, `${inst}/seed.iso`);
      let r = await host.start("d0", false);
      assert.equal(r.refused?.reason, "bad-disk", "the start's own checks refuse the link");
      // A volume of another user's: the start's checks pass (a plain file), the access step refuses it.
      await Deno.remove(`${inst}/seed.iso`);
      await Deno.writeFile(`${inst}/seed.iso`, new Uint8Array(2048), { mode: 0o600 });
      await Deno.chown(`${dir}/volumes/rw.raw`, 4242, 4242);
      r = await host.start("d0", false);
      assert.equal(r.refused?.reason, "bad-disk");
      assert.match(r.refused?.message ?? "", /rw\.raw is not a plain file of the node's/);
      const st = await Deno.lstat(`${dir}/volumes/rw.raw`);
      assert.deepEqual([st.mode! & 0o777, st.gid], [0o600, 4242], "another user's file is never changed");
      // A hard link to a file of the node's elsewhere: refused too.
      await Deno.remove(`${dir}/volumes/rw.raw`);
      await Deno.writeFile(`${elsewhere}/node-file`, new Uint8Array(0), { mode: 0o600 });
      await Deno.link(`${elsewhere}/node-file`, `${dir}/volumes/rw.raw`);
      r = await host.start("d0", false);
      assert.equal(r.refused?.reason, "bad-disk");
      assert.equal(await mode(`${elsewhere}/node-file`), 0o600);
      assert.equal((await Deno.lstat(secret)).mode! & 0o777, 0o600);
    } finally {
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(elsewhere, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "with libvirt's relabelling (the default) the directories get o+x and root changes no file's mode before a start",
  ignore: NOT_ROOT,
  fn: async () => {
    const { dir, host } = await hostWithDomains(1);
    try {
      const inst = `${dir}/libvirt/instances/d0`;
      assert.deepEqual(await host.start("d0", false), {});
      assert.equal(await mode(inst) & 0o011, 0o001, "o+x, no group search");
      assert.equal(await mode(`${inst}/disk.qcow2`), 0o600, "libvirt relabels it; bcd leaves it 0600");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "a memory save stops the domain: its disk, seed and volumes are closed again (0600), and a restore opens them",
  ignore: NOT_ROOT,
  fn: async () => {
    const { dir, host, inst, plan } = await groupHost();
    try {
      assert.deepEqual(await host.define(plan), {});
      assert.deepEqual(await host.start("d0", false), {});
      assert.deepEqual(await host.save("d0"), {});
      for (const f of [`${inst}/disk.qcow2`, `${inst}/seed.iso`, `${dir}/volumes/rw.raw`, `${dir}/volumes/ro.raw`]) {
        assert.deepEqual([f, await mode(f)], [f, 0o600]);
      }
      assert.deepEqual(await host.restore("d0", false), {});
      assert.equal(await mode(`${dir}/volumes/rw.raw`), 0o660);
      assert.equal(await mode(`${dir}/volumes/ro.raw`), 0o640);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
