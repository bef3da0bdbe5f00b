/**
 * Test-only child process for the Tree crash and confinement tests: installs one bundle and, when asked, ends the
 * process abruptly (exit 86, no cleanup) before a given step or in the middle of the unpack.
 *
 * Usage: deno run --allow-env --allow-sys --allow-read --allow-write=ROOT _tree_child.ts ROOT VERSION TARBALL [STEP|unpack-mid|flip-mid]
 *
 * @module
 */
import { UnsafeBundle } from "./errors.ts";
import { Tree } from "./tree.ts";

function _out(v: unknown): void {
  Deno.stdout.writeSync(new TextEncoder().encode(JSON.stringify(v) + "\n"));
}

const [root, version, tarball, crashAt] = Deno.args;
if (root === undefined || version === undefined || tarball === undefined) Deno.exit(2);
let files = 0;
const tree = new Tree(root, {
  beforeStep: (s) => s === crashAt ? Deno.exit(86) : undefined,
  symlink: async (target, path) => {
    await Deno.symlink(target, path);
    if (crashAt === "flip-mid") Deno.exit(86); // the link exists, the rename over current never happens
  },
});
try {
  await tree.install(version, await Deno.readFile(tarball), {
    content: () => {
      if (crashAt === "unpack-mid" && ++files === 2) Deno.exit(86);
    },
  });
  _out({ ok: true });
} catch (e) {
  if (!(e instanceof UnsafeBundle)) throw e;
  _out({ ok: false, reason: e.reason });
}
