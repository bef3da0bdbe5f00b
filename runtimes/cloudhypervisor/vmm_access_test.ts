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
