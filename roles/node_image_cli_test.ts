/**
 * `bcd-node image check` and `image check-overlay` as a process: one JSON object on stdout and the exit code
 * (0 accepted, 3 refused, 2 usage, 1 internal). Each run may read the checked image only (`--allow-read=PATH`),
 * which proves the check opens nothing the image names.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { hasQemuImg, makeCorpus } from "../core/images/_qemu_img.ts";
import { EXIT_INTERNAL, EXIT_OK, EXIT_REFUSED, EXIT_USAGE } from "./_cli.ts";

const HAS_QEMU_IMG = hasQemuImg();
if (!HAS_QEMU_IMG) console.log("skipping image CLI tests: `qemu-img` is not installed (Debian package `qemu-utils`)");
const NODE = fileURLToPath(new URL("./node.ts", import.meta.url));

async function node(
  readable: string,
  ...args: string[]
): Promise<{ code: number; json: Record<string, unknown> | null }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--allow-env", "--allow-sys", `--allow-read=${readable}`, NODE, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (text !== "") assert.equal(text.split("\n").length, 1, "one JSON object on stdout");
  return { code: out.code, json: text === "" ? null : JSON.parse(text) };
}

Deno.test({
  name: "bcd-node image check / check-overlay print one JSON object and exit 0, 3, 2 or 1",
  ignore: !HAS_QEMU_IMG,
  async fn(t) {
    const dir = await Deno.makeTempDir();
    try {
      const c = await makeCorpus(dir, ["backing-qcow2", "data-file"]);
      const base = c["v3"]!;
      const ov = c["backing-qcow2"]!;
      await t.step("a clean v3 base: accepted", async () => {
        const r = await node(base, "image", "check", "--format", "qcow2", base);
        assert.equal(r.code, EXIT_OK);
        assert.deepEqual(r.json, {
          ok: true,
          format: "qcow2",
          probed: true,
          version: 3,
          cluster_bits: 16,
          virtual_size: 1048576,
          backing_file: null,
          backing_format: null,
        });
      });
      await t.step("an image with a backing file: refused, backing-file", async () => {
        const r = await node(ov, "image", "check", "--format", "qcow2", ov);
        assert.equal(r.code, EXIT_REFUSED);
        assert.equal(r.json?.reason, "backing-file");
        assert.equal(typeof r.json?.message, "string");
      });
      await t.step("a data file: refused, data-file", async () => {
        const r = await node(c["data-file"]!, "image", "check", "--format", "qcow2", c["data-file"]!);
        assert.deepEqual([r.code, r.json?.reason], [EXIT_REFUSED, "data-file"]);
      });
      await t.step("raw and iso are never probed (not even readable here)", async () => {
        for (const format of ["raw", "iso"]) {
          const r = await node(base, "image", "check", "--format", format, join(dir, "unreadable"));
          assert.deepEqual([r.code, r.json], [EXIT_OK, { ok: true, format, probed: false }]);
        }
      });
      await t.step("the overlay names the recorded base: accepted", async () => {
        const r = await node(ov, "image", "check-overlay", "--backing", base, "--backing-format", "qcow2", ov);
        assert.equal(r.code, EXIT_OK);
        assert.equal(r.json?.backing_file, base);
      });
      await t.step("the overlay with another format or none expected: backing-mismatch", async () => {
        const r1 = await node(ov, "image", "check-overlay", "--backing", base, "--backing-format", "raw", ov);
        assert.deepEqual([r1.code, r1.json?.reason], [EXIT_REFUSED, "backing-mismatch"]);
        const r2 = await node(ov, "image", "check-overlay", "--no-backing", ov);
        assert.deepEqual([r2.code, r2.json?.reason], [EXIT_REFUSED, "backing-mismatch"]);
      });
      await t.step("usage errors exit 2 with nothing on stdout", async () => {
        for (
          const args of [
            ["image", "check", "--format", "vmdk", base],
            ["image", "check", base],
            ["image", "check", "--format", "qcow2"],
            ["image", "check", "--format", "qcow2", base, base],
            ["image", "check-overlay", ov],
            ["image", "check-overlay", "--backing", base, ov],
            ["image", "check-overlay", "--backing", base, "--backing-format", "vmdk", ov],
            ["image", "check-overlay", "--no-backing", "--backing", base, ov],
          ]
        ) {
          const r = await node(base, ...args);
          assert.deepEqual([r.code, r.json], [EXIT_USAGE, null], args.join(" "));
        }
      });
      await t.step("an unreadable file: internal error, exit 1", async () => {
        const r = await node(base, "image", "check", "--format", "qcow2", join(dir, "missing.qcow2"));
        assert.equal(r.code, EXIT_INTERNAL);
        assert.equal(r.json?.error, "internal");
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
