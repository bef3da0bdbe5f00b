/**
 * Child of `tree_fsync_test.ts`: installs two versions into the tree at `Deno.args[0]`, printing a marker after each
 * install returns, so an strace of this process shows what was fsynced before each rename and before the return.
 *
 * @module
 */
import { tgzOf } from "./_tar_gen.ts";
import { Tree } from "./tree.ts";

const tree = new Tree(Deno.args[0]!);
const enc = new TextEncoder();
for (const v of ["v1", "v2"]) {
  await tree.install(v, tgzOf([{ name: "conf/" }, { name: "conf/a.toml", content: `a="${v}"` }, { name: "b.json" }]));
  Deno.stdout.writeSync(enc.encode(`MARK installed ${v}\n`));
}
