/**
 * `bcd-guest bundle check` and `bundle install` as a process, run as `deno task guest` runs them (the launcher with the
 * guest's packaged flags, plus write access to exactly the `--root` named): one JSON object on stdout and the exit
 * code.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { tgzOf } from "../core/images/_tar_gen.ts";
import { EXIT_INTERNAL, EXIT_OK, EXIT_REFUSED, EXIT_USAGE } from "./_cli.ts";
import { launcherFlags, roleFlags } from "./permissions.ts";

const GUEST = fileURLToPath(new URL("./guest.ts", import.meta.url));
const LAUNCH = fileURLToPath(new URL("./launch.ts", import.meta.url));
/** The launcher runs `deno` from PATH, as under `deno task`: this Deno first. */
const PATH = `${dirname(Deno.execPath())}:${Deno.env.get("PATH") ?? ""}`;

async function guest(...args: string[]): Promise<{ code: number; json: Record<string, unknown> | null }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...launcherFlags("deno"), LAUNCH, "guest", ...args],
    env: { PATH },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  if (text !== "") assert.equal(text.split("\n").length, 1, "one JSON object on stdout");
  return { code: out.code, json: text === "" ? null : JSON.parse(text) };
}

Deno.test("bcd-guest bundle check / install print one JSON object and exit 0, 3 or 2", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    const good = join(dir, "good.tgz");
    const bad = join(dir, "bad.tgz");
    await Deno.writeFile(good, tgzOf([{ name: "conf/" }, { name: "conf/a.toml", content: "a=1" }]));
    await Deno.writeFile(bad, tgzOf([{ name: "../etc/passwd", content: "x" }]));
    const root = join(dir, "agent-config");
    await t.step("check accepts a safe bundle and says what it holds", async () => {
      assert.deepEqual(await guest("bundle", "check", good), {
        code: EXIT_OK,
        json: { ok: true, members: 2, bytes: 3 },
      });
    });
    await t.step("check refuses a traversal with its reason", async () => {
      const r = await guest("bundle", "check", bad);
      assert.deepEqual([r.code, r.json?.ok, r.json?.reason], [EXIT_REFUSED, false, "traversal"]);
    });
    await t.step("install writes the tree and flips current", async () => {
      const r = await guest("bundle", "install", "--root", root, "--version", "v-1", good);
      assert.deepEqual(r, { code: EXIT_OK, json: { ok: true, root, version: "v-1" } });
      assert.equal(await Deno.readTextFile(join(root, "current/version")), "v-1");
    });
    await t.step("install refuses an unsafe bundle and leaves current untouched", async () => {
      const r = await guest("bundle", "install", "--root", root, "--version", "v-2", bad);
      assert.deepEqual([r.code, r.json?.reason], [EXIT_REFUSED, "traversal"]);
      assert.equal(await Deno.readLink(join(root, "current")), "v-1");
      assert.deepEqual([...Deno.readDirSync(root)].map((e) => e.name).sort(), ["current", "v-1"]);
    });
    await t.step("usage: a bad or reserved version, a missing root or file", async () => {
      for (
        const args of [
          ["bundle", "install", "--root", root, "--version", "current", good],
          ["bundle", "install", "--root", root, "--version", "../x", good],
          ["bundle", "install", "--version", "v-3", good],
          ["bundle", "install", "--root", root, "--version", "v-3"],
          ["bundle", "install", "--root", root, "--version", "", good],
          ["bundle", "check"],
        ]
      ) {
        assert.deepEqual(await guest(...args), { code: EXIT_USAGE, json: null }, args.join(" "));
      }
    });
    await t.step("without its launcher (fixed flags): refused naming --root, and nothing is made", async () => {
      const r3 = join(dir, "unlaunched");
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", ...roleFlags("guest"), GUEST, "bundle", "install", "--root", r3, "--version", "v-1", good],
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(out.code, EXIT_INTERNAL);
      assert.match(new TextDecoder().decode(out.stderr), /bundle install needs write access to ".*unlaunched"/);
      await assert.rejects(Deno.lstat(r3), Deno.errors.NotFound);
    });
    await t.step('install --version "" only ensures the root', async () => {
      const r2 = join(dir, "empty-root");
      assert.equal((await guest("bundle", "install", "--root", r2, "--version", "")).code, EXIT_OK);
      assert.deepEqual([...Deno.readDirSync(r2)], []);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
