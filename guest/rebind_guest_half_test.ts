import assert from "node:assert/strict";
import { REBIND_SCRIPT, REBIND_SSHD_DROPIN, REBIND_UDEV_RULE, REBIND_UNIT } from "./rebind_guest_half.ts";
import { isRebindAnswer, REBIND_ANSWER_OFFSET, rebindImage, rebindNonce } from "../core/rebind/mod.ts";

const tools = async () => {
  for (const t of ["sh", "tar", "dd", "mktemp"]) {
    const o = await new Deno.Command("sh", { args: ["-c", `command -v ${t}`], stdout: "null" }).output()
      .catch((e) => {
        if (e instanceof Deno.errors.NotFound) return { success: false };
        throw e;
      });
    if (!o.success) return `${t} is not installed`;
  }
  return undefined;
};
const missing = await tools();
if (missing) console.log(`rebind_guest_half_test: ${missing}; the script test is skipped`);

Deno.test({
  name:
    "the guest half's script installs the principals and host key from a real rebind image and answers BCREBOUND <nonce>",
  ignore: missing !== undefined,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "bcd-rebind-guest-" });
    try {
      const nonce = rebindNonce();
      const disk = `${dir}/vdb`;
      await Deno.writeFile(
        disk,
        rebindImage({ account: "ubuntu", principals: "exec-r1\n", hostKey: "KEY\n", hostCertificate: "CERT\n" }, nonce),
      );
      await Deno.mkdir(`${dir}/sys/class/block/vdb`, { recursive: true });
      await Deno.writeTextFile(`${dir}/sys/class/block/vdb/serial`, "bc-rebind\n");
      await Deno.writeTextFile(`${dir}/bc-rebind`, REBIND_SCRIPT);
      const o = await new Deno.Command("sh", {
        args: [`${dir}/bc-rebind`, disk],
        env: {
          BC_REBIND_SYSFS: `${dir}/sys`,
          BC_REBIND_ETC: `${dir}/etc`,
          PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        },
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.ok(o.success, new TextDecoder().decode(o.stderr));
      assert.match(new TextDecoder().decode(o.stdout), /bc-rebind: rebound ubuntu/);
      assert.equal(await Deno.readTextFile(`${dir}/etc/ssh/auth_principals/ubuntu`), "exec-r1\n");
      assert.equal(await Deno.readTextFile(`${dir}/etc/ssh/bc_host_key`), "KEY\n");
      assert.equal((await Deno.stat(`${dir}/etc/ssh/bc_host_key`)).mode! & 0o077, 0, "the host key is private");
      assert.equal(await Deno.readTextFile(`${dir}/etc/ssh/bc_host_key-cert.pub`), "CERT\n");
      const img = await Deno.readFile(disk);
      assert.equal(img.length, 1024 * 1024, "the disk keeps its size");
      assert.ok(isRebindAnswer(img.subarray(REBIND_ANSWER_OFFSET), nonce));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "the guest half's script refuses a disk whose serial is not bc-rebind and answers nothing",
  ignore: missing !== undefined,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "bcd-rebind-guest-" });
    try {
      const disk = `${dir}/vdc`;
      await Deno.writeFile(disk, rebindImage({ account: "ubuntu", principals: "p\n" }, rebindNonce()));
      await Deno.writeTextFile(`${dir}/bc-rebind`, REBIND_SCRIPT);
      const o = await new Deno.Command("sh", {
        args: [`${dir}/bc-rebind`, disk],
        env: { BC_REBIND_SYSFS: `${dir}/sys`, BC_REBIND_ETC: `${dir}/etc` },
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(o.success, false);
      assert.match(new TextDecoder().decode(o.stderr), /is not the rebind disk/);
      assert.ok((await Deno.readFile(disk)).subarray(REBIND_ANSWER_OFFSET).every((b) => b === 0));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("README prints the guest half verbatim: the udev rule, the unit, the script and the sshd drop-in", async () => {
  const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  for (
    const [name, text] of [
      ["udev rule", REBIND_UDEV_RULE],
      ["unit", REBIND_UNIT],
      ["script", REBIND_SCRIPT],
      ["sshd drop-in", REBIND_SSHD_DROPIN],
    ]
  ) {
    assert.ok(readme.includes("```text\n" + text + "```\n"), `README lacks the ${name} verbatim`);
  }
});
