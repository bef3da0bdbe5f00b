/**
 * The bounded fuzz run of `deno task test:fuzz` (kept out of the default `*_test.ts` glob so `deno task test`
 * does not run it twice): a fixed number of seeded mutations of the real corpus through both safety kernels. The
 * unbounded run is `deno task fuzz:images` / `deno task fuzz:bundles` (fuzz_main.ts).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { hasQemuImg } from "./_qemu_img.ts";
import { bundleCorpus, fuzzBundles, fuzzImages, imageCorpus, lnSymlink } from "./_fuzz.ts";
import { Tree } from "./tree.ts";

const IMAGE_ITERATIONS = Number(Deno.env.get("FUZZ_IMAGE_ITERATIONS") ?? 30_000);
const BUNDLE_ITERATIONS = Number(Deno.env.get("FUZZ_BUNDLE_ITERATIONS") ?? 10_000);
const SEED = Number(Deno.env.get("FUZZ_SEED") ?? 20261130);

const HAS_QEMU_IMG = hasQemuImg();
if (!HAS_QEMU_IMG) {
  console.log("skipping the qcow2 fuzz run: `qemu-img` is not installed (Debian package `qemu-utils`)");
}

Deno.test({
  name: `fuzz: ${IMAGE_ITERATIONS} mutated qemu-img headers all get a verdict with a named reason`,
  ignore: !HAS_QEMU_IMG,
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const tally = fuzzImages(await imageCorpus(dir), IMAGE_ITERATIONS, SEED);
      console.log("images", JSON.stringify(tally));
      assert.ok((tally["base:accepted"] ?? 0) > 0 && (tally["overlay:accepted"] ?? 0) > 0);
      assert.ok((tally["base:malformed"] ?? 0) > 0 && (tally["overlay:backing-mismatch"] ?? 0) > 0);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** The bundle run's only writable directory: corpus, sandbox and nothing else. */
const BUNDLE_DIR = Deno.makeTempDirSync({ prefix: "bcd-fuzz-bundles-" });
globalThis.addEventListener("unload", () => Deno.removeSync(BUNDLE_DIR, { recursive: true }));

Deno.test({
  name: `fuzz: ${BUNDLE_ITERATIONS} mutated bundles all get a verdict, and unpack writes only below its sandbox`,
  // The test may write below BUNDLE_DIR only: a write anywhere else would fail the run with NotCapable.
  // Tree flips go through `ln`, since Deno.symlink refuses a path-scoped write grant.
  permissions: { read: true, write: [BUNDLE_DIR], run: ["sh", "tar", "ln"], env: true, sys: true },
  async fn() {
    const dir = BUNDLE_DIR;
    const corpus = await bundleCorpus(dir);
    const sandbox = join(dir, "sandbox");
    await Deno.mkdir(sandbox);
    const tree = new Tree(join(dir, "tree"), { symlink: lnSymlink });
    await tree.ensureRoot();
    const before = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    const tally = await fuzzBundles(corpus, BUNDLE_ITERATIONS, SEED, { sandbox, unpackEvery: 10, tree, treeEvery: 25 });
    console.log("bundles", JSON.stringify(tally));
    assert.ok((tally["accepted"] ?? 0) > 0 && (tally["tree:accepted"] ?? 0) > 0 && (tally["tree:refused"] ?? 0) > 0);
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name).sort(), before);
    assert.deepEqual([...Deno.readDirSync(sandbox)], []);
  },
});
