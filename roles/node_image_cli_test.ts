/**
 * `bcd-node image check` and `image check-overlay` as a process, run as `deno task node` runs them (the launcher,
 * `roles/launch.ts`, with the node's packaged flags plus read access to exactly the named image): one JSON object on
 * stdout and the exit code (0 accepted, 3 refused, 2 usage, 1 internal). Since each run may read the checked image
 * only, an accepted check proves it opens nothing the image names.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { hasQemuImg, makeCorpus } from "../core/images/_qemu_img.ts";
import { EXIT_INTERNAL, EXIT_OK, EXIT_REFUSED, EXIT_USAGE } from "./_cli.ts";
import { launcherFlags, roleFlags } from "./permissions.ts";

const HAS_QEMU_IMG = hasQemuImg();
if (!HAS_QEMU_IMG) console.log("skipping image CLI tests: `qemu-img` is not installed (Debian package `qemu-utils`)");
const NODE = fileURLToPath(new URL("./node.ts", import.meta.url));
const LAUNCH = fileURLToPath(new URL("./launch.ts", import.meta.url));
/** The launcher runs `deno` from PATH, as under `deno task`: this Deno first. */
const PATH = `${dirname(Deno.execPath())}:${Deno.env.get("PATH") ?? ""}`;

function _result(out: Deno.CommandOutput): { code: number; json: Record<string, unknown> | null; stderr: string } {
  const text = new TextDecoder().decode(out.stdout).trim();
  if (text !== "") assert.equal(text.split("\n").length, 1, "one JSON object on stdout");
  return { code: out.code, json: text === "" ? null : JSON.parse(text), stderr: new TextDecoder().decode(out.stderr) };
}

/** `deno task node ARGS`: the launcher, which adds the read grant of the named image to the node's flags. */
async function node(...args: string[]): Promise<{ code: number; json: Record<string, unknown> | null }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...launcherFlags("deno"), LAUNCH, "node", ...args],
    env: { PATH },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const { code, json } = _result(out);
  return { code, json };
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
        const r = await node("image", "check", "--format", "qcow2", base);
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
        const r = await node("image", "check", "--format", "qcow2", ov);
        assert.equal(r.code, EXIT_REFUSED);
        assert.equal(r.json?.reason, "backing-file");
        assert.equal(typeof r.json?.message, "string");
      });
      await t.step("a data file: refused, data-file", async () => {
        const r = await node("image", "check", "--format", "qcow2", c["data-file"]!);
        assert.deepEqual([r.code, r.json?.reason], [EXIT_REFUSED, "data-file"]);
      });
      await t.step("raw and iso are opened, never probed: a qcow2 header under them is only data", async () => {
        for (const format of ["raw", "iso"]) {
          const r = await node("image", "check", "--format", format, ov);
          assert.deepEqual([r.code, r.json], [EXIT_OK, { ok: true, format, probed: false }]);
        }
      });
      await t.step("raw and iso of a missing file: an error (exit 1), not an accepted image", async () => {
        for (const format of ["raw", "iso"]) {
          const r = await node("image", "check", "--format", format, join(dir, "missing.img"));
          assert.equal(r.code, EXIT_INTERNAL);
          assert.equal(r.json?.ok, false);
          assert.equal(r.json?.error, "internal");
          assert.match(String(r.json?.message), /No such file/);
        }
      });
      await t.step("the overlay names the recorded base: accepted", async () => {
        const r = await node("image", "check-overlay", "--backing", base, "--backing-format", "qcow2", ov);
        assert.equal(r.code, EXIT_OK);
        assert.equal(r.json?.backing_file, base);
      });
      await t.step("the overlay with another format or none expected: backing-mismatch", async () => {
        const r1 = await node("image", "check-overlay", "--backing", base, "--backing-format", "raw", ov);
        assert.deepEqual([r1.code, r1.json?.reason], [EXIT_REFUSED, "backing-mismatch"]);
        const r2 = await node("image", "check-overlay", "--no-backing", ov);
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
          const r = await node(...args);
          assert.deepEqual([r.code, r.json], [EXIT_USAGE, null], args.join(" "));
        }
      });
      await t.step("a missing qcow2: internal error, exit 1", async () => {
        const r = await node("image", "check", "--format", "qcow2", join(dir, "missing.qcow2"));
        assert.equal(r.code, EXIT_INTERNAL);
        assert.equal(r.json?.error, "internal");
      });
      await t.step("without its launcher (fixed flags, as a compiled binary): refused, naming the path", async () => {
        const out = await new Deno.Command(Deno.execPath(), {
          args: ["run", ...roleFlags("node"), NODE, "image", "check", "--format", "qcow2", base],
          stdout: "piped",
          stderr: "piped",
        }).output();
        const r = _result(out);
        assert.deepEqual([r.code, r.json], [EXIT_INTERNAL, null]);
        assert.match(
          r.stderr,
          /image check needs read access to ".*v3.*", which this run's permission flags do not grant/,
        );
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
