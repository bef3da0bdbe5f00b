/**
 * `bcd-<role> warm-cache` through the launcher (issue 24: the first start after an install or a self-update is as warm
 * as any other): it fills V8's code cache under the `DENO_DIR` used with the bundle's entry and every chunk, lazy ones
 * too, and runs nothing; the launcher picks its own `DENO_DIR` only for the owner of the agents' cache directory.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { AGENT_CACHE_DIR, bundleRole, launcherScript, WARM_CACHE_MODULE } from "./build.ts";

const WARM_CACHE_VERB = "warm-cache";

const dec = new TextDecoder();

/** The `file:` specifiers V8's code cache under `denoDir` holds (none when Deno never wrote one there). */
function cachedFiles(denoDir: string): Set<string> {
  const path = `${denoDir}/v8_code_cache_v2`;
  try {
    Deno.statSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return new Set();
    throw e;
  }
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const rows = db.prepare("SELECT specifier FROM codecache WHERE specifier LIKE 'file:%'").all() as {
      specifier: string;
    }[];
    return new Set(rows.map((r) => r.specifier));
  } finally {
    db.close();
  }
}

/** The bundle's own modules the agent can load: the entry and its chunks (not the warm-up, the launcher or workers). */
function agentModules(dir: string, role: string): string[] {
  const skip = new Set([WARM_CACHE_MODULE, "launch.js"]);
  const names = [...Deno.readDirSync(dir)].filter((e) => e.isFile && e.name.endsWith(".js") && !skip.has(e.name));
  assert.ok(names.some((e) => e.name === `bcd-${role}.js`));
  return names.map((e) => new URL(`file://${dir}/${e.name}`).href).sort();
}

async function run(cmd: string, args: string[], env: Record<string, string>) {
  const o = await new Deno.Command(cmd, { args, env, clearEnv: true, stdout: "piped", stderr: "piped" }).output();
  return { code: o.code, out: dec.decode(o.stdout), err: dec.decode(o.stderr) };
}

const PATH = Deno.env.get("PATH") ?? "/usr/bin:/bin";
const ROOT_USER = Deno.uid() === 0;
if (!ROOT_USER) console.log("warm_cache_test: the launcher DENO_DIR test is skipped: needs root (chown of its dir)");

Deno.test("warm-cache: the DENO_DIR used holds the entry and every chunk afterwards; a cold one holds none", async () => {
  const work = await Deno.makeTempDir({ prefix: "bcd-warm-" });
  try {
    for (const role of ["sim", "node"] as const) {
      const dir = await bundleRole(role, "warm-test", `${work}/dist`);
      const modules = agentModules(dir, role);
      // The node has lazily imported chunks (telemetry, config delivery): the warm-up must reach those too.
      assert.ok(modules.length > 1, `${role}: the bundle has chunks`);
      const cold = `${work}/cold-${role}`;
      assert.deepEqual([...cachedFiles(cold)], [], "a cold DENO_DIR holds no module");
      // The role's own warm-cache subcommand (the entry run directly) reaches its static graph only.
      const started = `${work}/started-${role}`;
      const v = await run(
        `${dir}/deno`,
        ["run", "--no-config", "--no-lock", "--node-modules-dir=manual", "-A", `${dir}/bcd-${role}.js`, "warm-cache"],
        { PATH, DENO_DIR: started },
      );
      assert.equal(v.code, 0, v.err);
      const afterSubcommand = cachedFiles(started);
      assert.ok(afterSubcommand.has(modules.find((m) => m.endsWith(`/bcd-${role}.js`))!));
      assert.ok(modules.some((m) => !afterSubcommand.has(m)), `${role}: the static graph leaves lazy chunks cold`);

      const warm = `${work}/warm-${role}`;
      const w = await run(`${dir}/bcd-${role}`, [WARM_CACHE_VERB], { PATH, DENO_DIR: warm });
      assert.equal(w.code, 0, w.err);
      assert.equal(w.out + w.err, "", "the warm-up says nothing: it runs nothing");
      const cached = cachedFiles(warm);
      for (const m of modules) assert.ok(cached.has(m), `${role}: ${m} is in the code cache after ${WARM_CACHE_VERB}`);
    }
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});

Deno.test("the warm-up runs nothing: with no permission at all granted it loads every module and exits 0", async () => {
  const work = await Deno.makeTempDir({ prefix: "bcd-warm-none-" });
  try {
    const dir = await bundleRole("node", "warm-test", `${work}/dist`);
    // No --allow-*: a module that read a file, the environment or the network, or ran a tool, at import would fail.
    const r = await run(
      `${dir}/deno`,
      ["run", "--no-config", "--no-lock", "--node-modules-dir=manual", "--no-prompt", `${dir}/${WARM_CACHE_MODULE}`],
      { PATH, DENO_DIR: `${work}/deno` },
    );
    assert.equal(r.code, 0, r.err);
    assert.equal(r.out + r.err, "");
    for (const m of agentModules(dir, "node")) assert.ok(cachedFiles(`${work}/deno`).has(m), m);
  } finally {
    await Deno.remove(work, { recursive: true });
  }
});

Deno.test(
  {
    name: "the launcher's DENO_DIR: the agents' cache dir for its owner, unless the environment names one",
    ignore: !ROOT_USER,
  },
  async () => {
    const work = await Deno.makeTempDir({ prefix: "bcd-warm-dir-" });
    try {
      const dir = await bundleRole("sim", "warm-test", `${work}/dist`);
      const cacheDir = `${work}/cache`;
      await Deno.mkdir(cacheDir);
      // The launcher as built, pointed at a cache dir of this test's instead of /var/cache/bcd.
      const launcher = `${dir}/bcd-sim-t`;
      assert.ok(launcherScript("sim").includes(`[ -O ${AGENT_CACHE_DIR} ]`));
      await Deno.writeTextFile(launcher, launcherScript("sim").replaceAll(AGENT_CACHE_DIR, cacheDir), { mode: 0o755 });
      const home = `${work}/home`;
      const entry = new URL(`file://${dir}/bcd-sim.js`).href;

      // Owned by someone else (the bcd user, say, when root runs the launcher by hand): Deno's own default.
      await Deno.chown(cacheDir, 65534, 65534);
      const other = await run(launcher, [WARM_CACHE_VERB], { PATH, HOME: home });
      assert.equal(other.code, 0, other.err);
      assert.ok(!cachedFiles(`${cacheDir}/deno`).has(entry), "not the cache dir of another user");
      assert.ok(cachedFiles(`${home}/.cache/deno`).has(entry), "Deno's default under HOME");

      await Deno.chown(cacheDir, 0, 0);
      const named = `${work}/named`;
      const n = await run(launcher, [WARM_CACHE_VERB], { PATH, HOME: home, DENO_DIR: named });
      assert.equal(n.code, 0, n.err);
      assert.ok(cachedFiles(named).has(entry), "the environment's DENO_DIR wins");
      assert.ok(!cachedFiles(`${cacheDir}/deno`).has(entry));

      const own = await run(launcher, [WARM_CACHE_VERB], { PATH, HOME: home });
      assert.equal(own.code, 0, own.err);
      assert.ok(cachedFiles(`${cacheDir}/deno`).has(entry), "the owner's cache dir");
    } finally {
      await Deno.remove(work, { recursive: true });
    }
  },
);
