import assert from "node:assert/strict";
import { compileArgs, launcherScript, WORKER_MODULES } from "./build.ts";
import { ARG_GRANTS, EXECUTABLES, permissionsOf, roleFlags } from "./permissions.ts";

const ROOT = new URL("../", import.meta.url).pathname;

Deno.test("each launcher runs the bundle with exactly its role's flags", () => {
  for (const role of EXECUTABLES) {
    const script = launcherScript(role);
    for (const f of roleFlags(role)) assert.ok(script.includes(`'${f}'`), `${role} launcher lacks ${f}`);
    assert.ok(script.includes(`"$here/bcd-${role}.js"`));
    const allowAll = permissionsOf(role).allowAll !== undefined;
    assert.equal(script.includes("'--allow-all'"), allowAll, `${role}: --allow-all only where the table says why`);
    assert.ok(!script.includes(" -A "));
    for (const g of ARG_GRANTS[role]) {
      assert.ok(
        script.includes(`'${g.command.join(" ")}'`),
        `${role} launcher hands ${g.command.join(" ")} to launch.js`,
      );
    }
    assert.equal(script.includes('"$here/launch.js"'), ARG_GRANTS[role].length > 0, role);
  }
});

Deno.test("a launcher reached through a symlink (the package's /usr/sbin/bcd-helper) runs the Deno and bundle beside its target", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-launcher-link-" });
  try {
    const lib = `${dir}/usr/lib/bcd/bcd-helper`;
    await Deno.mkdir(lib, { recursive: true });
    await Deno.mkdir(`${dir}/usr/sbin`, { recursive: true });
    await Deno.writeTextFile(`${lib}/bcd-helper`, launcherScript("helper"), { mode: 0o755 });
    // A stand-in for the pinned Deno: it prints what it was asked to run.
    await Deno.writeTextFile(`${lib}/deno`, '#!/bin/sh\necho "$@"\n', { mode: 0o755 });
    await Deno.symlink("../lib/bcd/bcd-helper/bcd-helper", `${dir}/usr/sbin/bcd-helper`);
    for (const exe of [`${dir}/usr/sbin/bcd-helper`, `${lib}/bcd-helper`]) {
      const out = await new Deno.Command(exe, { args: ["version"], stdout: "piped", stderr: "piped" }).output();
      assert.ok(out.success, `${exe}: ${new TextDecoder().decode(out.stderr)}`);
      assert.match(new TextDecoder().decode(out.stdout), new RegExp(` ${lib}/bcd-helper\\.js version\n$`), exe);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno compile gets the role's flags and writes bin/bcd-<role>", () => {
  for (const role of EXECUTABLES) {
    const args = compileArgs(role);
    assert.equal(args[0], "compile");
    for (const f of roleFlags(role)) assert.ok(args.includes(f), `${role} compile lacks ${f}`);
    assert.equal(args[args.indexOf("--output") + 1], `bin/bcd-${role}`);
  }
});

Deno.test("`make bundle` produces seven launchers (five roles, the helper and bcd-vm) that print their version", async (t) => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", "bundle"],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  for (const role of EXECUTABLES) {
    await t.step(role, async () => {
      const r = await new Deno.Command(`${ROOT}dist/bcd-${role}/bcd-${role}`, {
        args: ["version"],
        cwd: "/",
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(r.code, 0, new TextDecoder().decode(r.stderr));
      const v = JSON.parse(new TextDecoder().decode(r.stdout)) as { role: string; build: string };
      assert.equal(v.role, role);
      assert.notEqual(v.build, "source", "the bundle carries its build id");
      if (ARG_GRANTS[role].length > 0) assert.ok(Deno.statSync(`${ROOT}dist/bcd-${role}/launch.js`).isFile);
      for (const w of WORKER_MODULES[role]) {
        assert.ok(
          Deno.statSync(`${ROOT}dist/bcd-${role}/${w.name}`).isFile,
          `${w.name} is bundled beside bcd-${role}.js`,
        );
      }
      // Split at dynamic imports (issue 24): every chunk a bundled file names is there, and what an agent loads only
      // on demand (the OpenTelemetry SDK) is not in the file it parses at start.
      const dir = `${ROOT}dist/bcd-${role}`;
      for (const e of Deno.readDirSync(dir)) {
        if (!e.name.endsWith(".js")) continue;
        const text = Deno.readTextFileSync(`${dir}/${e.name}`);
        for (const m of text.matchAll(/(?:from|import\()\s*"\.\/([^"]+\.js)"/g)) {
          assert.ok(Deno.statSync(`${dir}/${m[1]}`).isFile, `${e.name} names ./${m[1]}, which the bundle holds`);
        }
      }
      if (["node", "site", "ramdisk", "sim"].includes(role)) {
        // What a start parses: the entry and the chunks it imports statically (code an on-demand chunk shares with
        // the entry goes to such a chunk), never one only an import() names.
        const files = new Set<string>();
        const entry = _staticClosure(dir, `bcd-${role}.js`, files);
        // Those chunks merged into one module (merge_start.ts): a start loads two files, whatever the split made.
        assert.ok(files.size <= 2, `bcd-${role}'s start loads ${[...files].join(", ")}`);
        if (files.size === 2) assert.ok(files.has(`bcd-${role}-start.js`), [...files].join(", "));
        assert.ok(entry.includes('"Journal"'), "the entry holds the agent's own code (core/journal/, its name kept)");
        // Minified (BUNDLE_FLAGS): a start pays for every byte it loads; unminified, each module opens with its path.
        assert.ok(!entry.includes("// core/"), "the entry is minified");
        assert.ok(!entry.includes("@opentelemetry"), "the OpenTelemetry SDK is in a chunk loaded on demand");
        // The Ed25519 thread is the verifier a caller may pass; no agent's start makes one (core/pki/ed25519_thread.ts).
        assert.ok(!entry.includes("the Ed25519 verifier is closed"), "the Ed25519 thread's class is not on the start");
      }
    });
  }
});

/** The text of `file` and of every chunk it imports statically, transitively (`import…from"./x.js"`, not `import()`). */
function _staticClosure(dir: string, file: string, seen = new Set<string>()): string {
  if (seen.has(file)) return "";
  seen.add(file);
  const text = Deno.readTextFileSync(`${dir}/${file}`);
  let out = text;
  for (const m of text.matchAll(/\bimport\s*(?:[^"'()]*?\bfrom\s*)?"\.\/([^"]+\.js)"/g)) {
    out += _staticClosure(dir, m[1]!, seen);
  }
  return out;
}
