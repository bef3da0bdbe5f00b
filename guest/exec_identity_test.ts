// Seed 004 T4's boundary legs, with real processes: an execution of the worker runs as a non-root uid with an empty
// capability set, so it cannot write into, chmod, or flip the root-owned config tree the worker installed; uid 0 is
// refused with the seed's words. Needs root (to drop to another uid); skips with the reason otherwise.
import assert from "node:assert/strict";
import { join } from "node:path";
import { silentLogger } from "../core/log/mod.ts";
import { agentConfigRoot, ConfigInstaller } from "./config_install.ts";
import { checkExecIdentity, DEFAULT_EXEC_IDENTITY } from "./process_group.ts";
import { exec, session, start } from "./_session_harness.ts";

const ROOT = Deno.uid() === 0;
let SETPRIV = false;
try {
  SETPRIV = (await new Deno.Command("setpriv", { args: ["--version"], stdout: "null", stderr: "null" }).output())
    .success;
} catch (e) {
  if (!(e instanceof Deno.errors.NotFound)) throw e;
}
const SKIP = !ROOT ? "not root: cannot drop an execution to another uid" : !SETPRIV ? "no setpriv (util-linux)" : "";
if (SKIP) console.log(`exec_identity_test: skipped: ${SKIP}`);

async function _bundle(): Promise<Uint8Array> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-t4-bundle-" });
  await Deno.writeTextFile(join(dir, "agent.yaml"), "a: 1\n");
  const out = await new Deno.Command("tar", { args: ["-czf", join(dir, "b.tgz"), "-C", dir, "agent.yaml"] }).output();
  assert.ok(out.success);
  const bytes = await Deno.readFile(join(dir, "b.tgz"));
  await Deno.remove(dir, { recursive: true });
  return bytes;
}

Deno.test("exec uid 0 is refused with the seed's words", () => {
  assert.throws(() => checkExecIdentity({ uid: 0, gid: 0 }), /exec uid 0 is refused/);
  assert.deepEqual(checkExecIdentity(DEFAULT_EXEC_IDENTITY), DEFAULT_EXEC_IDENTITY);
});

Deno.test({
  name: "T4: an execution runs non-root with no capabilities and cannot touch, chmod or flip the config tree",
  ignore: SKIP !== "",
  fn: async () => {
    // The guest root must be reachable by the execution's uid (0711, as the installer makes it) along its path.
    const base = await Deno.makeTempDir({ prefix: "bcd-t4-", dir: "/tmp" });
    await Deno.chmod(base, 0o755);
    const guestRoot = join(base, "guest");
    const installer = new ConfigInstaller({ guestRoot, log: silentLogger() });
    const x = await session({ worker: { installer, execIdentity: DEFAULT_EXEC_IDENTITY } });
    try {
      assert.equal(await x.c.installAgentConfig("v-1", await _bundle()), true);
      const tree = agentConfigRoot(guestRoot);
      const script = [
        `echo uid=$(id -u) gid=$(id -g)`,
        `grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status`,
        `echo version=$(cat ${tree}/current/version)`,
        `touch ${tree}/current/x 2>/dev/null; echo touch=$?`,
        `echo b >> ${tree}/current/agent.yaml 2>/dev/null; echo append=$?`,
        `chmod 0777 ${tree}/current/agent.yaml 2>/dev/null; echo chmod=$?`,
        `ln -sfn /tmp ${tree}/current 2>/dev/null; echo ln=$?`,
        `mv ${tree}/current ${tree}/moved 2>/dev/null; echo mv=$?`,
      ].join("\n");
      const { peer, out } = await exec(x.c, start(["/bin/sh", "-c", script]));
      const outcome = await peer.terminal;
      const text = out.text(1);
      assert.deepEqual(outcome.status, { kind: "exit", code: 0 }, `${text}\n${out.text(2)}`);
      assert.match(text, /^uid=65534 gid=65534$/m);
      for (const cap of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]) {
        assert.match(text, new RegExp(`^${cap}:\\s+0000000000000000$`, "m"), `${cap} not empty:\n${text}`);
      }
      assert.match(text, /^version=v-1$/m, "the tree is readable");
      for (const op of ["touch", "append", "chmod", "ln", "mv"]) {
        assert.match(text, new RegExp(`^${op}=[1-9]$`, "m"), `${op} succeeded:\n${text}`);
      }
      assert.equal(await Deno.readLink(join(tree, "current")), "v-1");
      assert.equal(await Deno.readTextFile(join(tree, "current/agent.yaml")), "a: 1\n");
      assert.equal((await Deno.stat(join(tree, "current/agent.yaml"))).mode! & 0o777, 0o644);
      await x.c.stop();
      await x.run;
    } finally {
      x.c.close();
      await Deno.remove(base, { recursive: true });
    }
  },
});
