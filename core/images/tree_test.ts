import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { tgzOf } from "./_tar_gen.ts";
import { UnsafeBundle } from "./errors.ts";
import { INSTALL_STEPS, Tree } from "./tree.ts";

/** Every entry below `dir`: type, mode, link target or content digest, so two snapshots compare exactly. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const rec = async (d: string, rel: string) => {
    for await (const ent of Deno.readDir(d)) {
      const p = join(d, ent.name);
      const r = rel ? `${rel}/${ent.name}` : ent.name;
      const st = await Deno.lstat(p);
      const mode = (st.mode! & 0o7777).toString(8);
      if (st.isSymlink) out[r] = `link ${await Deno.readLink(p)}`;
      else if (st.isDirectory) {
        out[r] = `dir ${mode}`;
        await rec(p, r);
      } else out[r] = `file ${mode} ${createHash("sha256").update(await Deno.readFile(p)).digest("hex").slice(0, 16)}`;
    }
  };
  await rec(dir, "");
  return out;
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const V1 = tgzOf([{ name: "conf/" }, { name: "conf/a.toml", content: "a=1" }, { name: "b.json", content: "{}" }]);
const V2 = tgzOf([{ name: "conf/" }, { name: "conf/a.toml", content: "a=2" }, { name: "c.yaml", content: "c: 2" }]);

Deno.test("install() writes <version>/ with a version file and flips a relative current to it", async () => {
  await withDir(async (dir) => {
    const root = join(dir, "agent-config");
    const tree = new Tree(root);
    await tree.install("v-1", V1);
    assert.equal(await Deno.readLink(join(root, "current")), "v-1");
    assert.equal(await Deno.readTextFile(join(root, "current/version")), "v-1");
    assert.equal(await Deno.readTextFile(join(root, "current/conf/a.toml")), "a=1");
    assert.deepEqual(Object.keys(await snapshot(join(root, "v-1"))).sort(), [
      "b.json",
      "conf",
      "conf/a.toml",
      "version",
    ]);
    for (const [k, v] of Object.entries(await snapshot(join(root, "v-1")))) {
      assert.match(v, k === "conf" ? /^dir 755$/ : /^file 644 /, k);
    }
    assert.equal((await Deno.stat(join(root, "v-1"))).mode! & 0o7777, 0o755);
  });
});

Deno.test("install() of a newer version prunes older ones and keeps dot-prefixed entries", async () => {
  await withDir(async (root) => {
    const tree = new Tree(root);
    await tree.install("v-1", V1);
    await Deno.writeTextFile(join(root, ".keep"), "mine");
    await Deno.mkdir(join(root, ".lock.d"));
    await tree.install("v-2", V2);
    assert.equal(await tree.currentVersion(), "v-2");
    assert.deepEqual([...Deno.readDirSync(root)].map((e) => e.name).sort(), [".keep", ".lock.d", "current", "v-2"]);
    assert.equal(await Deno.readTextFile(join(root, "current/c.yaml")), "c: 2");
  });
});

Deno.test("install() is idempotent per version: an existing version directory is kept as it is", async () => {
  await withDir(async (root) => {
    const tree = new Tree(root);
    await tree.install("v-1", V1);
    const before = await snapshot(root);
    await tree.install("v-1", V2);
    assert.deepEqual(await snapshot(root), before);
    assert.equal(await Deno.readTextFile(join(root, "current/conf/a.toml")), "a=1");
  });
});

Deno.test('install("") only ensures the root; no current appears', async () => {
  await withDir(async (dir) => {
    const root = join(dir, "a/b");
    await new Tree(root).install("", new Uint8Array(0));
    assert.deepEqual([...Deno.readDirSync(root)], []);
    assert.equal(await new Tree(root).currentVersion(), null);
  });
});

Deno.test('install("") with a bundle is refused (RangeError): "" takes no chunks (seed 004), nothing is made', async () => {
  await withDir(async (dir) => {
    const root = join(dir, "a");
    await assert.rejects(new Tree(root).install("", V1), RangeError);
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  });
});

Deno.test("a failed flip leaves nothing behind: no half-made <version>/, no root it created, current untouched", async (t) => {
  const failing = () => Promise.reject(new Deno.errors.NotCapable("symlink refused"));
  await t.step("into a root the install created: the root is gone again", async () => {
    await withDir(async (dir) => {
      const root = join(dir, "tree");
      await assert.rejects(new Tree(root, { symlink: failing }).install("v-1", V1), Deno.errors.NotCapable);
      assert.deepEqual([...Deno.readDirSync(dir)], []);
    });
  });
  await t.step("into an existing tree: exactly the tree as it was", async () => {
    await withDir(async (root) => {
      await new Tree(root).install("v-1", V1);
      const before = await snapshot(root);
      await assert.rejects(new Tree(root, { symlink: failing }).install("v-2", V2), Deno.errors.NotCapable);
      assert.deepEqual(await snapshot(root), before);
    });
  });
  await t.step("re-installing the live version keeps it (it was not made by the failed install)", async () => {
    await withDir(async (root) => {
      await new Tree(root).install("v-1", V1);
      const before = await snapshot(root);
      await assert.rejects(new Tree(root, { symlink: failing }).install("v-1", V1), Deno.errors.NotCapable);
      assert.deepEqual(await snapshot(root), before);
    });
  });
});

Deno.test("install() refuses a version outside ^[A-Za-z0-9_-]+$ and the reserved current", async (t) => {
  for (const v of ["current", "../x", "a/b", "a.b", ".hidden", " ", "v\n", "ü"]) {
    await t.step(JSON.stringify(v), async () => {
      await withDir(async (root) => {
        await assert.rejects(new Tree(root).install(v, V1), RangeError);
        assert.deepEqual([...Deno.readDirSync(root)], []);
      });
    });
  }
});

Deno.test("a refused bundle or a Check error leaves the root exactly as it was, current untouched", async (t) => {
  const rows: Array<[string, Uint8Array, (e: unknown) => boolean, object?]> = [
    [
      "traversal",
      tgzOf([{ name: "x/1", content: "1" }, { name: "../../escape", content: "e" }]),
      (e) => e instanceof UnsafeBundle && e.reason === "traversal",
    ],
    [
      "symlink",
      tgzOf([{ name: "x/1", content: "1" }, { name: "l", type: "2", linkname: "/" }]),
      (e) => e instanceof UnsafeBundle && e.reason === "symlink",
    ],
    ["truncated gzip", V2.subarray(0, V2.length - 4), (e) => e instanceof UnsafeBundle && e.reason === "bad-gzip"],
  ];
  for (const [what, tgz, isErr] of rows) {
    await t.step(what, async () => {
      await withDir(async (root) => {
        const tree = new Tree(root);
        await tree.install("v-1", V1);
        const before = await snapshot(root);
        await assert.rejects(tree.install("v-2", tgz), isErr);
        assert.deepEqual(await snapshot(root), before);
      });
    });
  }
  await t.step("Check error", async () => {
    await withDir(async (root) => {
      const tree = new Tree(root);
      await tree.install("v-1", V1);
      const before = await snapshot(root);
      const err = new Error("schema: c.yaml not allowed");
      await assert.rejects(
        tree.install("v-2", V2, {
          member: (c) => {
            if (c === "c.yaml") throw err;
          },
        }),
        (e) => e === err,
      );
      assert.deepEqual(await snapshot(root), before);
    });
  });
});

Deno.test("a beforeFlip error leaves current unflipped and removes the version; the directory is complete when it runs", async () => {
  await withDir(async (root) => {
    const tree = new Tree(root);
    await tree.install("v-1", V1);
    const before = await snapshot(root);
    const err = new Error("relabel failed");
    let seen = "";
    await assert.rejects(
      tree.install("v-2", V2, {}, async (d) => {
        seen = await Deno.readTextFile(join(d, "version"));
        throw err;
      }),
      (e) => e === err,
    );
    assert.equal(seen, "v-2");
    assert.deepEqual(await snapshot(root), before);
    assert.equal(await tree.currentVersion(), "v-1");
    assert.equal(await Deno.readTextFile(join(root, "current/conf/a.toml")), "a=1");
    await tree.install("v-2", V2);
    assert.equal(await tree.currentVersion(), "v-2");
  });
});

const CHILD = fileURLToPath(new URL("./_tree_child.ts", import.meta.url));

/**
 * Runs one install in a child process. `scoped` grants writes below `root` only, which proves a refused install
 * writes nowhere else; a flip needs unscoped writes, since Deno.symlink refuses path-scoped grants.
 */
async function child(root: string, version: string, tarball: string, crashAt = "", scoped = false) {
  return await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      "--allow-env",
      "--allow-sys",
      "--allow-read",
      scoped ? `--allow-write=${root}` : "--allow-write",
      CHILD,
      root,
      version,
      tarball,
      crashAt,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
}

Deno.test("a crash at any step leaves the whole old tree or the whole new one, and the next install cleans up", async (t) => {
  await withDir(async (dir) => {
    const tgz = join(dir, "v2.tgz");
    await Deno.writeFile(tgz, V2);
    const ref = join(dir, "ref");
    await new Tree(ref).install("v-1", V1);
    const old = await snapshot(join(ref, "v-1"));
    await new Tree(ref).install("v-2", V2);
    const neu = await snapshot(join(ref, "v-2"));
    for (const step of [...INSTALL_STEPS, "unpack-mid", "flip-mid"]) {
      await t.step(step, async () => {
        const root = join(dir, `root-${step}`);
        const tree = new Tree(root);
        await tree.install("v-1", V1);
        const out = await child(root, "v-2", tgz, step);
        assert.equal(out.code, 86, new TextDecoder().decode(out.stderr));
        const cur = await tree.currentVersion();
        assert.ok(cur === "v-1" || cur === "v-2");
        assert.deepEqual(await snapshot(join(root, "current/")), cur === "v-1" ? old : neu);
        await tree.install("v-3", V1);
        assert.deepEqual([...Deno.readDirSync(root)].map((e) => e.name).sort(), ["current", "v-3"]);
      });
    }
  });
});

Deno.test("hostile installs write nothing outside the root (child allowed to write only there)", async () => {
  await withDir(async (dir) => {
    const root = join(dir, "root");
    await new Tree(root).install("v-1", V1);
    const bundles = [
      tgzOf([{ name: "../outside", content: "x" }]),
      tgzOf([{ name: "/tmp/abs", content: "x" }]),
      tgzOf([{ name: "l", type: "2", linkname: ".." }, { name: "l/x", content: "x" }]),
      tgzOf([{ name: "h", type: "1", linkname: "../outside" }]),
      tgzOf([{ name: "a\\..\\..\\x", content: "x" }]),
    ];
    const before = await snapshot(dir);
    for (const [i, b] of bundles.entries()) {
      const p = join(dir, `b${i}.tgz`);
      await Deno.writeFile(p, b);
      before[`b${i}.tgz`] = (await snapshot(dir))[`b${i}.tgz`]!;
      const out = await child(root, "v-2", p, "", true);
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      assert.equal(JSON.parse(new TextDecoder().decode(out.stdout)).ok, false);
    }
    assert.deepEqual(await snapshot(dir), before);
  });
});

Deno.test("an injected symlink maker creates the flip link (for processes with path-scoped writes)", async () => {
  await withDir(async (root) => {
    const made: string[] = [];
    const tree = new Tree(root, {
      symlink: async (target, path) => {
        made.push(target);
        const out = await new Deno.Command("ln", { args: ["-s", "--", target, path] }).output();
        if (!out.success) throw new Error("ln failed");
      },
    });
    await tree.install("v-1", V1);
    assert.deepEqual(made, ["v-1"]);
    assert.equal(await Deno.readLink(join(root, "current")), "v-1");
  });
});
