import assert from "node:assert/strict";
import { join } from "node:path";
import { writeGuestInitramfs } from "./guest_initramfs.ts";

async function hasCpio(): Promise<boolean> {
  try {
    return (await new Deno.Command("cpio", { args: ["--version"], stdout: "null" }).output()).success;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}
const cpio = await hasCpio();
if (!cpio) console.log("guest_initramfs_test: cpio missing (apt cpio): the archive listing is skipped");

Deno.test({
  name:
    "the VM's initramfs is the base as it is, then the guest agent's archive at a multiple of 4 bytes, for bases of every length modulo 4",
  ignore: !cpio,
  fn: async () => {
    const dir = await Deno.makeTempDir();
    try {
      for (const len of [1000, 1001, 1002, 1003]) {
        const base = new Uint8Array(len).map((_, i) => i % 251);
        await Deno.writeFile(join(dir, "base"), base);
        const agent = new TextEncoder().encode("x".repeat(len % 7 + 1));
        const off = await writeGuestInitramfs(join(dir, "base"), join(dir, "out"), agent, ["--allow-all"]);
        const out = await Deno.readFile(join(dir, "out"));
        assert.equal(off % 4, 0);
        assert.deepEqual(out.subarray(0, len), base, "the base stays as it is");
        assert.ok(out.subarray(len, off).every((b) => b === 0), "zeros up to the archive");
        await Deno.writeFile(join(dir, "archive"), out.subarray(off));
        const list = await new Deno.Command("cpio", {
          args: ["-itv", "-F", join(dir, "archive")],
          stdout: "piped",
          stderr: "piped",
        }).output();
        assert.ok(list.success, new TextDecoder().decode(list.stderr));
        const lines = new TextDecoder().decode(list.stdout).trim().split("\n");
        const byName = new Map(lines.map((l) => [l.split(/\s+/)[8], l]));
        assert.match(byName.get("sbin/bcd-guest")!, /^-rwxr-xr-x\s+1 root\s+root/);
        assert.match(byName.get("opt/bcd/guest.js")!, /^-rw-r--r--/);
        assert.match(byName.get("sbin/bcd-managed-agent")!, /^lrwx.* -> bcd-guest-init$/);
        assert.match(byName.get("sbin/bcd-init-agent")!, /^lrwx.* -> bcd-guest-layered$/);
        const ex = await new Deno.Command("cpio", {
          args: ["-i", "--to-stdout", "-F", join(dir, "archive"), "sbin/bcd-guest-layered"],
          stdout: "piped",
          stderr: "null",
        }).output();
        assert.equal(
          new TextDecoder().decode(ex.stdout),
          "#!/bin/sh\nexec /sbin/bcd-guest init /dev/virtio-ports/org.bcd.control layered\n",
        );
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
