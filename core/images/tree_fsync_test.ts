// The config tree's power-loss order, seen by strace: every file and directory of a staged version is fsynced before
// the rename that puts it in place, the root is fsynced after that rename, and after the `current` flip before
// install() returns. Without it ext4 commits the flip ahead of the files' blocks and a power cut leaves `current`
// naming empty files (`deno task test:powerloss` found that).
import assert from "node:assert/strict";
import { join } from "node:path";

async function _hasStrace(): Promise<boolean> {
  try {
    return (await new Deno.Command("strace", { args: ["-V"], stdout: "null", stderr: "null" }).output()).success;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

const STRACE = await _hasStrace();
if (!STRACE) console.log("tree_fsync_test: SKIPPED: strace is not installed (apt-get install strace)");

Deno.test({
  name: "install() fsyncs the staged version before renaming it into place and the root after each rename",
  ignore: !STRACE,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "bcd-tree-fsync-" });
    try {
      const root = join(dir, "tree");
      const trace = join(dir, "trace.txt");
      const out = await new Deno.Command("strace", {
        args: [
          "-f",
          "-y",
          "-e",
          "trace=fsync,fdatasync,rename,renameat,renameat2,write",
          "-o",
          trace,
          Deno.execPath(),
          "run",
          "--allow-all", // Deno.symlink refuses path-scoped grants
          new URL("./_tree_fsync_child.ts", import.meta.url).pathname,
          root,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.ok(out.success, new TextDecoder().decode(out.stderr));
      const synced = new Set<string>();
      const versions: string[] = [];
      let rootSyncedSince = false;
      let flipped = false;
      for (const l of (await Deno.readTextFile(trace)).split("\n")) {
        // With -f, another thread's call may split a line into "<unfinished ...>" and "<... fsync resumed>"; the
        // install awaits each fsync before its next step, so the call's first line is in the right place.
        const sync = /f(?:data)?sync\(\d+<([^>]*)>(?:\) = 0| <unfinished \.\.\.>)/.exec(l);
        if (sync) {
          synced.add(sync[1]!);
          if (sync[1] === root) rootSyncedSince = true;
          continue;
        }
        const ren = /rename(?:at2?)?\((?:[^,]*, )?"([^"]*)", (?:[^,]*, )?"([^"]*)"/.exec(l);
        if (ren) {
          const [from, to] = [ren[1]!, ren[2]!];
          if (from.includes("/.staging-")) {
            for (const p of ["", "/conf", "/conf/a.toml", "/b.json", "/version"]) {
              assert.ok(synced.has(from + p), `${from + p} was not fsynced before its version was renamed into place`);
            }
            versions.push(to);
          } else if (from.includes("/.current-")) {
            assert.ok(rootSyncedSince, `the rename of ${versions.at(-1)} into place was not fsynced before the flip`);
            flipped = true;
          }
          rootSyncedSince = false;
          continue;
        }
        const mark = /write\(1<[^>]*>, "MARK installed (v\d)/.exec(l);
        if (mark) {
          assert.ok(flipped && rootSyncedSince, `install ${mark[1]} returned before its flip was fsynced`);
          flipped = false;
        }
      }
      assert.deepEqual(versions, [join(root, "v1"), join(root, "v2")]);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
