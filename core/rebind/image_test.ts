import assert from "node:assert/strict";
import { isRebindAnswer, REBIND_ANSWER_OFFSET, REBIND_DISK_BYTES, rebindImage, rebindNonce } from "./image.ts";

const hasTar = await new Deno.Command("sh", { args: ["-c", "command -v tar"], stdout: "null" }).output()
  .then((o) => o.success);
if (!hasTar) console.log("image_test: GNU tar is not installed; the real-tar test is skipped");

Deno.test({
  name: "rebindImage() is 1 MiB with a tar at 0 that GNU tar reads, and a zeroed answer block",
  ignore: !hasTar,
  fn: async () => {
    const nonce = rebindNonce();
    const img = rebindImage({
      account: "ubuntu",
      principals: "exec-r1\n",
      hostKey: "KEY\n",
      hostCertificate: "CERT\n",
    }, nonce);
    assert.equal(img.length, REBIND_DISK_BYTES);
    assert.ok(img.subarray(REBIND_ANSWER_OFFSET).every((b) => b === 0));
    const dir = await Deno.makeTempDir({ prefix: "bcd-rebind-img-" });
    try {
      await Deno.writeFile(`${dir}/disk`, img);
      await Deno.mkdir(`${dir}/x`);
      const o = await new Deno.Command("tar", { args: ["-xf", `${dir}/disk`, "-C", `${dir}/x`] }).output();
      assert.ok(o.success, new TextDecoder().decode(o.stderr));
      assert.equal(await Deno.readTextFile(`${dir}/x/nonce`), `${nonce}\n`);
      assert.equal(await Deno.readTextFile(`${dir}/x/account`), "ubuntu\n");
      assert.equal(await Deno.readTextFile(`${dir}/x/principals`), "exec-r1\n");
      assert.equal(await Deno.readTextFile(`${dir}/x/host_key`), "KEY\n");
      assert.equal(await Deno.readTextFile(`${dir}/x/host_key-cert.pub`), "CERT\n");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("isRebindAnswer() accepts BCREBOUND with this try's nonce only", () => {
  const nonce = rebindNonce();
  const block = (s: string) => {
    const b = new Uint8Array(4096);
    b.set(new TextEncoder().encode(s));
    return b;
  };
  assert.equal(isRebindAnswer(block(`BCREBOUND ${nonce}\n`), nonce), true);
  assert.equal(isRebindAnswer(block(`BCREBOUND ${nonce}`), nonce), true, "NUL-terminated");
  assert.equal(isRebindAnswer(block(`BCREBOUND ${rebindNonce()}\n`), nonce), false, "another try's answer");
  assert.equal(isRebindAnswer(block("BCREBOUND\n"), nonce), false);
  assert.equal(isRebindAnswer(new Uint8Array(4096), nonce), false, "no answer");
  assert.throws(() => rebindImage({ account: "a", principals: "p\n" }, "xyz"), RangeError);
});
