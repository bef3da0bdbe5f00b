import assert from "node:assert/strict";
import { SetfaclAccess } from "./vmm_access.ts";
import { VMM_UID_BASE } from "./unit.ts";

async function tool(cmd: string, args: string[]): Promise<string | undefined> {
  try {
    const o = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "null" }).output();
    return o.success ? new TextDecoder().decode(o.stdout) : undefined;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    throw e;
  }
}
async function _why(): Promise<string | undefined> {
  if ((await tool("getfacl", ["--version"])) === undefined) return "setfacl/getfacl (Debian acl) are not installed";
  const dir = await Deno.makeTempDir({ prefix: "bcd-acl-probe-" });
  try {
    const ok = await tool("setfacl", ["-m", `u:${VMM_UID_BASE}:r`, dir]);
    return ok === undefined ? "the temp directory's filesystem takes no POSIX ACL entries" : undefined;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
const WHY = await _why();
if (WHY) console.log(`SetfaclAccess test ignored: ${WHY}`);

Deno.test({
  name:
    "SetfaclAccess grants the VMM's uid rwX on the instance directory and its files, inherited by new files, and takes it back",
  ignore: WHY !== undefined,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "bcd-ch-acl-" });
    try {
      await Deno.writeTextFile(`${dir}/disk.qcow2`, "x", { mode: 0o600 });
      const uid = VMM_UID_BASE + 7;
      const a = new SetfaclAccess();
      await a.grant(dir, uid);
      const onFile = (await tool("getfacl", ["-n", "-p", `${dir}/disk.qcow2`]))!;
      assert.match(onFile, new RegExp(`^user:${uid}:rw-$`, "m"));
      const onDir = (await tool("getfacl", ["-n", "-p", dir]))!;
      assert.match(onDir, new RegExp(`^default:user:${uid}:rwx$`, "m"));
      await Deno.writeTextFile(`${dir}/serial.log`, "");
      assert.match((await tool("getfacl", ["-n", "-p", `${dir}/serial.log`]))!, new RegExp(`^user:${uid}:`, "m"));
      await a.revoke(dir, uid);
      for (const f of [dir, `${dir}/disk.qcow2`, `${dir}/serial.log`]) {
        assert.doesNotMatch((await tool("getfacl", ["-n", "-p", f]))!, new RegExp(`user:${uid}:`));
      }
      assert.equal((await Deno.stat(`${dir}/disk.qcow2`)).uid, Deno.uid(), "the node keeps owning the file");
      await assert.rejects(a.grant(dir, 1000), RangeError);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "SetfaclAccess grants a volume r or rw and the volume store's directory x (no listing) to one VMM uid, and takes each back",
  ignore: WHY !== undefined,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "bcd-ch-acl-vol-" });
    try {
      await Deno.chmod(dir, 0o700);
      await Deno.writeTextFile(`${dir}/a.raw`, "", { mode: 0o600 });
      await Deno.writeTextFile(`${dir}/b.raw`, "", { mode: 0o600 });
      const uid = VMM_UID_BASE + 9;
      const a = new SetfaclAccess();
      await a.grantFile(dir, uid, "x");
      await a.grantFile(`${dir}/a.raw`, uid, "rw");
      await a.grantFile(`${dir}/b.raw`, uid, "r");
      assert.match((await tool("getfacl", ["-n", "-p", dir]))!, new RegExp(`^user:${uid}:--x$`, "m"));
      assert.match((await tool("getfacl", ["-n", "-p", `${dir}/a.raw`]))!, new RegExp(`^user:${uid}:rw-$`, "m"));
      assert.match((await tool("getfacl", ["-n", "-p", `${dir}/b.raw`]))!, new RegExp(`^user:${uid}:r--$`, "m"));
      for (const f of [dir, `${dir}/a.raw`, `${dir}/b.raw`]) await a.revokeFile(f, uid);
      for (const f of [dir, `${dir}/a.raw`, `${dir}/b.raw`]) {
        assert.doesNotMatch((await tool("getfacl", ["-n", "-p", f]))!, new RegExp(`user:${uid}:`), f);
      }
      await a.revokeFile(`${dir}/gone.raw`, uid);
      await assert.rejects(a.grantFile(`${dir}/a.raw`, uid, "rwx" as "rw"), RangeError);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
