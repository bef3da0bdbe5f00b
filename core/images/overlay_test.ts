import assert from "node:assert/strict";
import { join } from "node:path";
import { hasQemuImg, makeCorpus, qemuImg, setU32, setU64 } from "./_qemu_img.ts";
import { type ImageReason, ImageRefused } from "./errors.ts";
import { EXT_BACKING_FORMAT } from "./qcow2_header.ts";
import { checkOverlay, type ExpectedBacking } from "./overlay.ts";

const HAS_QEMU_IMG = hasQemuImg();
if (!HAS_QEMU_IMG) console.log("skipping overlay tests: `qemu-img` is not installed (Debian package `qemu-utils`)");

async function verdict(path: string, expected: ExpectedBacking | null): Promise<ImageReason | "accepted"> {
  try {
    await checkOverlay(path, expected);
    return "accepted";
  } catch (e) {
    if (e instanceof ImageRefused) return e.reason;
    throw e;
  }
}

Deno.test({
  name: "checkOverlay() against overlays made by qemu-img create -u -b BASE -F FMT, and patched ones",
  ignore: !HAS_QEMU_IMG,
  async fn(t) {
    const dir = await Deno.makeTempDir();
    try {
      const c = await makeCorpus(dir, [
        "backing-qcow2",
        "backing-raw",
        "v2-backing",
        "overlay-flat",
        "overlay-with-data-file",
        "overlay-luks",
      ]);
      const base = c["v3"]!;
      const raw = c["base.raw"]!;
      const q = (path: string): ExpectedBacking => ({ path, format: "qcow2" });
      const r = (path: string): ExpectedBacking => ({ path, format: "raw" });
      await qemuImg(dir, "create", "-f", "qcow2", "-u", "-b", "/etc/shadow", "-F", "raw", "shadow.qcow2", "1M");
      await qemuImg(dir, "create", "-f", "qcow2", "-u", "-b", "v3.qcow2", "-F", "qcow2", "relative.qcow2", "1M");
      const bytes = await Deno.readFile(c["backing-qcow2"]!);
      const patched = async (name: string, patch: (b: Uint8Array) => void) => {
        const b = bytes.slice();
        patch(b);
        await Deno.writeFile(join(dir, name), b);
        return join(dir, name);
      };
      const hl = 112;
      assert.equal(new DataView(bytes.buffer).getUint32(hl), EXT_BACKING_FORMAT);
      const noFormat = await patched("no-format.qcow2", (b) => setU32(b, hl, 0x12345678));
      const dirty = await patched("dirty.qcow2", (b) => setU64(b, 72, 1n));
      const unknown = await patched("unknown.qcow2", (b) => setU64(b, 72, 1n << 40n));
      const rows: Array<[string, string, ExpectedBacking | null, ImageReason | "accepted"]> = [
        ["qcow2 base, recorded qcow2", c["backing-qcow2"]!, q(base), "accepted"],
        ["raw base, recorded raw", c["backing-raw"]!, r(raw), "accepted"],
        ["v2 overlay, recorded qcow2", c["v2-backing"]!, q(base), "accepted"],
        ["flat disk, none recorded (restored snapshot or iso install)", c["overlay-flat"]!, null, "accepted"],
        ["qcow2 base, recorded raw (format differs)", c["backing-qcow2"]!, r(base), "backing-mismatch"],
        ["raw base, recorded qcow2 (format differs)", c["backing-raw"]!, q(raw), "backing-mismatch"],
        ["another base path", c["backing-qcow2"]!, q(join(dir, "other.qcow2")), "backing-mismatch"],
        ["/etc/shadow as backing file", join(dir, "shadow.qcow2"), r(raw), "backing-mismatch"],
        ["a relative name of the same base", join(dir, "relative.qcow2"), q(base), "backing-mismatch"],
        ["a backing file where none is recorded", c["backing-qcow2"]!, null, "backing-mismatch"],
        ["no backing file where one is recorded", c["overlay-flat"]!, q(base), "backing-mismatch"],
        ["a backing file without its format extension", noFormat, q(base), "backing-mismatch"],
        ["a data file with the right backing", c["overlay-with-data-file"]!, q(base), "data-file"],
        ["LUKS with the right backing", c["overlay-luks"]!, q(base), "encrypted"],
        ["an unknown incompatible bit with the right backing", unknown, q(base), "unknown-feature"],
        ["the dirty bit with the right backing", dirty, q(base), "malformed"],
        ["a raw file as the disk", raw, null, "malformed"],
      ];
      for (const [what, path, expected, want] of rows) {
        await t.step(`${what}: ${want}`, async () => assert.equal(await verdict(path, expected), want));
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
