import assert from "node:assert/strict";
import { cacheDirOwner, warmCodeCache, warmCommand } from "./code_cache.ts";

Deno.test("warmCommand: the unit's path (current/bcd-<role>) with warm-cache, as the agent's ids, in a clean env with DENO_DIR; never as root", () => {
  const c = warmCommand({ releasesDir: "/opt/bcd", role: "node", uid: 998, gid: 997, denoDir: "/var/cache/bcd/deno" });
  assert.equal(c.cmd, "setpriv");
  assert.deepEqual(c.args.slice(0, 3), ["--reuid=998", "--regid=997", "--clear-groups"]);
  assert.deepEqual(c.args.slice(c.args.indexOf("--")), ["--", "/opt/bcd/current/bcd-node", "warm-cache"]);
  assert.equal(c.env.DENO_DIR, "/var/cache/bcd/deno");
  assert.throws(
    () => warmCommand({ releasesDir: "/opt/bcd", role: "node", uid: 0, gid: 997, denoDir: "/x" }),
    RangeError,
  );
});

Deno.test({
  name:
    "warmCodeCache runs the current release's launcher as the agent's uid with its DENO_DIR; a failing one throws with its words",
  ignore: Deno.uid() !== 0 && (console.log("  (skipped: setpriv to another uid needs root)"), true),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "bcd-warm-" });
    try {
      await Deno.chmod(dir, 0o755);
      await Deno.mkdir(`${dir}/releases/1.0.0`, { recursive: true });
      await Deno.symlink("releases/1.0.0", `${dir}/current`);
      const cache = `${dir}/cache`;
      await Deno.mkdir(cache, { mode: 0o777 });
      await Deno.chmod(cache, 0o777);
      const launcher = `${dir}/releases/1.0.0/bcd-node`;
      await Deno.writeTextFile(launcher, '#!/bin/sh\necho "$(id -u) $0 $1 $DENO_DIR" > "$DENO_DIR/ran"\n', {
        mode: 0o755,
      });
      await warmCodeCache({ releasesDir: dir, role: "node", uid: 65534, gid: 65534, denoDir: cache });
      assert.equal(await Deno.readTextFile(`${cache}/ran`), `65534 ${dir}/current/bcd-node warm-cache ${cache}\n`);
      await Deno.writeTextFile(launcher, "#!/bin/sh\necho 'deno: cannot open bcd-node.js' >&2\nexit 3\n");
      await assert.rejects(
        warmCodeCache({ releasesDir: dir, role: "node", uid: 65534, gid: 65534, denoDir: cache }),
        /failed \(exit 3\): deno: cannot open bcd-node\.js/,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "cacheDirOwner: the owner of the DENO_DIR's parent (whom the launcher gives it); none when absent or root's",
  ignore: Deno.uid() !== 0 && (console.log("  (skipped: chown to another uid needs root)"), true),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "bcd-cache-owner-" });
    try {
      assert.equal(await cacheDirOwner(`${dir}/bcd/deno`), null, "absent");
      await Deno.mkdir(`${dir}/bcd`);
      assert.equal(await cacheDirOwner(`${dir}/bcd/deno`), null, "root's: never warmed as root");
      await Deno.chown(`${dir}/bcd`, 998, 997);
      assert.deepEqual(await cacheDirOwner(`${dir}/bcd/deno`), { uid: 998, gid: 997 });
      await Deno.writeTextFile(`${dir}/file`, "");
      await Deno.chown(`${dir}/file`, 998, 997);
      assert.equal(await cacheDirOwner(`${dir}/file/deno`), null, "not a directory");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
