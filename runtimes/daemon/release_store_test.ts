import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { generateSigningKeyPair } from "../../core/pki/ed25519.ts";
import { signRelease } from "../../core/daemon/release.ts";
import { UnsafeBundle } from "../../core/images/errors.ts";
import { memoryLogger } from "../../core/log/mod.ts";
import { ReleaseStore } from "./release_store.ts";
import { HelperUpgrader, STAGING_DIR } from "./helper_upgrader.ts";

/** A release tar.gz made by GNU tar: a launcher, the "runtime", a JS file, a directory. */
async function releaseTar(dir: string, name: string, extra?: (root: string) => Promise<void>): Promise<Uint8Array> {
  const src = `${dir}/${name}-src`;
  await Deno.mkdir(`${src}/lib`, { recursive: true });
  await Deno.writeTextFile(`${src}/bcd-node`, `#!/bin/sh\necho ${name}\n`);
  await Deno.writeTextFile(`${src}/deno`, "#!/bin/sh\nexit 0\n");
  await Deno.writeTextFile(`${src}/bcd-node.js`, `console.log("${name}");\n`);
  await Deno.writeTextFile(`${src}/lib/data.txt`, name);
  if (extra) await extra(src);
  const out = await new Deno.Command("tar", { args: ["-czf", "-", "-C", src, "."], stdout: "piped" }).output();
  assert.ok(out.success);
  return out.stdout;
}

/** Stages `bytes` where the agent downloads releases (under `<dir>/data`); their SHA-256. */
async function stageRelease(dir: string, bytes: Uint8Array): Promise<string> {
  const sha = createHash("sha256").update(bytes).digest("hex");
  await Deno.mkdir(`${dir}/data/${STAGING_DIR}`, { recursive: true });
  await Deno.writeFile(`${dir}/data/${STAGING_DIR}/${sha}.tar.gz`, bytes);
  return sha;
}

Deno.test("release store: unpack through the safety kernel, swap, confirm keeps two, rollback, recover after a crash", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-releases-" });
  const store = new ReleaseStore(`${dir}/opt`);
  try {
    await t.step("unpack marks only the launchers and the runtime executable", async () => {
      await store.unpack("0.1.0", await releaseTar(dir, "r1"));
      const st = (p: string) => Deno.statSync(`${dir}/opt/releases/0.1.0/${p}`).mode! & 0o777;
      assert.equal(st("bcd-node"), 0o755);
      assert.equal(st("deno"), 0o755);
      assert.equal(st("bcd-node.js"), 0o644);
      assert.equal(st("lib/data.txt"), 0o644);
    });
    await t.step("a tar with a symlink is refused and leaves nothing", async () => {
      const bad = await releaseTar(dir, "evil", (src) => Deno.symlink("/etc/shadow", `${src}/link`));
      await assert.rejects(store.unpack("0.9.0", bad), (e) => e instanceof UnsafeBundle && e.reason === "symlink");
      assert.deepEqual(await store.versions(), ["0.1.0"]);
      assert.deepEqual([...Deno.readDirSync(`${dir}/opt/releases`)].map((e) => e.name), ["0.1.0"], "no staging left");
    });
    await t.step("swap records the pending swap, then moves current; confirm makes it stand", async () => {
      await store.swap("0.1.0", 0);
      await store.confirm("0.1.0");
      await store.unpack("0.2.0", await releaseTar(dir, "r2"));
      const p = await store.swap("0.2.0", 12345);
      assert.deepEqual(p, { version: "0.2.0", previous: "0.1.0", deadlineMs: 12345 });
      assert.equal(Deno.readLinkSync(`${dir}/opt/current`), "releases/0.2.0");
      assert.deepEqual((await store.state()).pending, p);
      assert.equal(await store.confirm("0.9.9"), false, "a confirm for another version changes nothing");
      assert.equal(await store.confirm("0.2.0"), true);
      assert.deepEqual(await store.state(), { current: "0.2.0", previous: "0.1.0", pending: null, failed: null });
    });
    await t.step("a third release confirmed: at most two kept", async () => {
      await store.unpack("0.3.0", await releaseTar(dir, "r3"));
      await store.swap("0.3.0", 1);
      await store.confirm("0.3.0");
      assert.deepEqual(await store.versions(), ["0.2.0", "0.3.0"]);
    });
    await t.step("rollback moves current back, records why and removes the failed release", async () => {
      await store.unpack("0.4.0", await releaseTar(dir, "r4"));
      await store.swap("0.4.0", 1);
      const f = await store.rollback("rolled-back", "no Welcome");
      assert.deepEqual(f, { version: "0.4.0", reason: "rolled-back", message: "no Welcome" });
      assert.equal(await store.current(), "0.3.0");
      assert.deepEqual(await store.versions(), ["0.2.0", "0.3.0"]);
      assert.deepEqual((await store.state()).failed, f);
    });
    await t.step(
      "recover: a swap whose link never moved is dropped; one past its deadline rolls back; one within waits",
      async () => {
        await store.unpack("0.5.0", await releaseTar(dir, "r5"));
        // A crash between the pending record and the flip: write the record as swap() does, leave current alone.
        await Deno.writeTextFile(
          `${dir}/opt/state.json`,
          JSON.stringify({ pending: { version: "0.5.0", previous: "0.3.0", deadlineMs: 10 }, failed: null }),
        );
        assert.equal(await store.recover(5), null);
        assert.equal(await store.current(), "0.3.0");
        assert.equal((await store.state()).pending, null);
        await store.swap("0.5.0", 100);
        const waiting = await store.recover(50);
        assert.equal(waiting?.version, "0.5.0");
        assert.equal(await store.recover(100), null);
        assert.equal(await store.current(), "0.3.0", "rolled back at its deadline");
        assert.equal((await store.state()).failed?.version, "0.5.0");
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a first swap (no release before it) rolled back leaves no current link and no failed release", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-releases-" });
  try {
    const store = new ReleaseStore(`${dir}/opt`);
    await store.unpack("0.2.0", await releaseTar(dir, "r2"));
    await store.swap("0.2.0", 1);
    assert.equal((await store.state()).pending?.previous, null);
    await store.rollback("rolled-back", "no Welcome");
    assert.equal(await store.current(), null);
    assert.deepEqual(await store.versions(), []);
    assert.equal((await store.state()).failed?.version, "0.2.0");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("helper upgrader: reads the staged artifact as root, re-checks digest and signature, swaps, restarts; no confirm → rollback", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-upgrader-" });
  const key = await generateSigningKeyPair();
  const other = await generateSigningKeyPair();
  const store = new ReleaseStore(`${dir}/opt`);
  await store.unpack("0.1.0", await releaseTar(dir, "r1"));
  await store.swap("0.1.0", 0);
  await store.confirm("0.1.0");
  let restarts = 0;
  let restarted: () => void = () => {};
  const mem = memoryLogger("debug");
  const up = new HelperUpgrader({
    store,
    agentDataDir: `${dir}/data`,
    releaseKeys: () => Promise.resolve([key.publicKey]),
    restart: () => (restarts++, restarted(), Promise.resolve()),
    confirmTimeoutMs: 10_000,
    log: mem.logger,
  });
  const stage = (bytes: Uint8Array) => stageRelease(dir, bytes);
  try {
    const tar2 = await releaseTar(dir, "r2");
    const sha2 = await stage(tar2);
    await t.step("not staged, or staged as a symlink: refused", async () => {
      assert.deepEqual(
        await up.install({ version: "0.2.0", sha256: "00".repeat(32), signature: new Uint8Array() }),
        { refused: { reason: "not-staged", message: `no staged release ${"00".repeat(32)}` } },
      );
      await Deno.symlink("/etc/passwd", `${dir}/data/${STAGING_DIR}/${"11".repeat(32)}.tar.gz`);
      const a = await up.install({ version: "0.2.0", sha256: "11".repeat(32), signature: new Uint8Array() });
      assert.equal("refused" in a && a.refused.reason, "not-staged");
    });
    await t.step("the staged bytes do not hash to the digest: bad-digest, nothing swapped", async () => {
      const evil = "22".repeat(32);
      await Deno.writeFile(`${dir}/data/${STAGING_DIR}/${evil}.tar.gz`, tar2);
      const a = await up.install({
        version: "0.2.0",
        sha256: evil,
        signature: await signRelease(key.privateKey, evil),
      });
      assert.equal("refused" in a && a.refused.reason, "bad-digest");
      assert.equal(await store.current(), "0.1.0");
    });
    await t.step("signed by a key root does not trust, or unsigned: BAD_SIGNATURE, nothing unpacked", async () => {
      const a = await up.install({
        version: "0.2.0",
        sha256: sha2,
        signature: await signRelease(other.privateKey, sha2),
      });
      assert.equal("refused" in a && a.refused.reason, "BAD_SIGNATURE");
      const b = await up.install({ version: "0.2.0", sha256: sha2, signature: new Uint8Array() });
      assert.equal("refused" in b && b.refused.reason, "BAD_SIGNATURE");
      assert.deepEqual(await store.versions(), ["0.1.0"]);
      assert.equal(restarts, 0);
    });
    await t.step(
      "a good release: unpacked, swapped, the staged file removed, the agent restarted; confirm stands",
      async () => {
        const r = new Promise<void>((res) => restarted = res);
        assert.deepEqual(
          await up.install({ version: "0.2.0", sha256: sha2, signature: await signRelease(key.privateKey, sha2) }),
          { installed: true },
        );
        await r;
        assert.equal(restarts, 1);
        assert.equal(await store.current(), "0.2.0");
        assert.equal((await store.state()).pending?.version, "0.2.0");
        await assert.rejects(Deno.stat(`${dir}/data/${STAGING_DIR}/${sha2}.tar.gz`), Deno.errors.NotFound);
        assert.deepEqual(await up.confirm("0.2.0"), { confirmed: true });
        assert.equal((await store.state()).pending, null);
      },
    );
    await t.step("no confirm before the deadline: rolled back to the previous release and restarted", async () => {
      const quick = new HelperUpgrader({
        store,
        agentDataDir: `${dir}/data`,
        releaseKeys: () => Promise.resolve([key.publicKey]),
        restart: () => (restarts++, restarted(), Promise.resolve()),
        confirmTimeoutMs: 1,
        log: mem.logger,
      });
      const tar3 = await releaseTar(dir, "r3");
      const sha3 = await stage(tar3);
      let n = 0;
      const two = new Promise<void>((res) => restarted = () => ++n === 2 && res());
      const a = await quick.install({
        version: "0.3.0",
        sha256: sha3,
        signature: await signRelease(key.privateKey, sha3),
      });
      assert.deepEqual(a, { installed: true });
      await two; // the swap's restart, then the rollback's
      assert.equal(await store.current(), "0.2.0");
      const st = await store.state();
      assert.equal(st.pending, null);
      assert.equal(st.failed?.version, "0.3.0");
      assert.equal(st.failed?.reason, "rolled-back");
      assert.deepEqual(await store.versions(), ["0.1.0", "0.2.0"]);
    });
  } finally {
    up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("helper upgrader: a swapped-in release's code cache is warmed before the agent's restart; a failed warm-up is logged and the restart goes ahead", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-upgrader-warm-" });
  const key = await generateSigningKeyPair();
  const store = new ReleaseStore(`${dir}/opt`);
  await store.unpack("0.1.0", await releaseTar(dir, "r1"));
  await store.swap("0.1.0", 0);
  await store.confirm("0.1.0");
  const events: string[] = [];
  let restarted: () => void = () => {};
  let warmFails = false;
  const mem = memoryLogger("debug");
  const up = new HelperUpgrader({
    store,
    agentDataDir: `${dir}/data`,
    releaseKeys: () => Promise.resolve([key.publicKey]),
    warm: async () => {
      events.push(`warm ${await store.current()}`);
      if (warmFails) throw new Error("setpriv: exit 1");
    },
    restart: () => (events.push("restart"), restarted(), Promise.resolve()),
    confirmTimeoutMs: 60_000,
    log: mem.logger,
  });
  try {
    const install = async (version: string, name: string) => {
      const sha = await stageRelease(dir, await releaseTar(dir, name));
      const r = new Promise<void>((res) => restarted = res);
      assert.deepEqual(await up.install({ version, sha256: sha, signature: await signRelease(key.privateKey, sha) }), {
        installed: true,
      });
      await r;
      assert.deepEqual(await up.confirm(version), { confirmed: true });
    };
    await install("0.2.0", "r2");
    assert.deepEqual(events, ["warm 0.2.0", "restart"], "warmed from the swapped-in release, then restarted");
    warmFails = true;
    await install("0.3.0", "r3");
    assert.deepEqual(events.slice(2), ["warm 0.3.0", "restart"]);
    assert.ok(
      mem.lines.some((l) => String(l.msg).includes("could not be warmed") && l.err === "setpriv: exit 1"),
      "the failed warm-up is logged",
    );
  } finally {
    up.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
