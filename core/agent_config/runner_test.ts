// Seed 004 T3's Runner cycle against fakes (the control plane and the guest as in-memory ports), the schema row by
// row, and the guest's codes mapped by name. Bundles are made by real GNU tar.
import assert from "node:assert/strict";
import { silentLogger } from "../log/mod.ts";
import { walk } from "../images/mod.ts";
import {
  BUNDLE_SCHEMA,
  BundleSchemaError,
  ConfigDeliveryError,
  ConfigRunner,
  type ConfigSource,
  type FetchedBundle,
  GUEST_CODE_MAP,
  type GuestConfigPort,
  GuestInstallRefused,
} from "./mod.ts";
import { tarBundle } from "./_bundles_test_util.ts";

class FakeSource implements ConfigSource {
  published: { version: string; tarball: Uint8Array } | null = null;
  fetches: string[] = [];
  fetch(ifVersion: string): Promise<FetchedBundle> {
    this.fetches.push(ifVersion);
    const p = this.published;
    if (p === null) return Promise.resolve({ version: "", tarball: null });
    if (p.version === ifVersion) return Promise.resolve({ version: p.version, tarball: null });
    return Promise.resolve({ version: p.version, tarball: p.tarball });
  }
}

class FakeGuest implements GuestConfigPort {
  installs: string[] = [];
  fail: GuestInstallRefused | Error | null = null;
  install(version: string): Promise<void> {
    if (this.fail) return Promise.reject(this.fail);
    this.installs.push(version);
    return Promise.resolve();
  }
}

async function _setup() {
  const source = new FakeSource();
  const guest = new FakeGuest();
  let reloads = 0;
  let reloadFails = false;
  const runner = new ConfigRunner({
    source,
    guest,
    log: silentLogger(),
    reload: () => {
      if (reloadFails) return Promise.reject(new Error("agent did not restart"));
      reloads++;
      return Promise.resolve();
    },
  });
  const good = await tarBundle({ "agent.yaml": "model: x\n", "skills/one.md": "# one\n" });
  return {
    source,
    guest,
    runner,
    good,
    reloads: () => reloads,
    failReload: (v: boolean) => (reloadFails = v),
  };
}

const code = (c: string) => (e: unknown) => e instanceof ConfigDeliveryError && e.code === c;

Deno.test("provision installs (v-1) and seeds the version; nothing published installs no tree", async () => {
  const x = await _setup();
  assert.equal(await x.runner.provision(), "");
  assert.deepEqual(x.guest.installs, []);
  x.source.published = { version: "v-1", tarball: x.good };
  assert.equal(await x.runner.provision(), "v-1");
  assert.deepEqual(x.guest.installs, ["v-1"]);
  assert.equal(x.runner.lastVersion, "v-1");
  assert.equal(x.reloads(), 0, "provision starts the agent after the push; it does not reload");
});

Deno.test("a bad-schema bundle, or one over the wire cap, fails provision with no install call", async () => {
  const x = await _setup();
  x.source.published = { version: "v-1", tarball: await tarBundle({ "etc/passwd": "root::0:0::/:/bin/sh\n" }) };
  await assert.rejects(x.runner.provision(), code("bundle-schema"));
  const small = new ConfigRunner({
    source: x.source,
    guest: x.guest,
    log: silentLogger(),
    reload: () => Promise.resolve(),
    maxWireBytes: x.good.length - 1,
  });
  x.source.published = { version: "v-2", tarball: x.good };
  await assert.rejects(small.provision(), code("bundle-unsafe"));
  x.source.published = { version: "v-3", tarball: await tarBundle({ "agent.yaml": "a\n" }, "s,^\\./,../,") };
  await assert.rejects(x.runner.provision(), code("bundle-unsafe"));
  assert.deepEqual(x.guest.installs, []);
  assert.equal(x.runner.lastVersion, null);
});

Deno.test("every guest code is mapped by name; unimplemented reads 'guest image too old'", async (t) => {
  const rows: [string, string][] = [
    ["unimplemented", "guest-image-too-old"],
    ["invalid-argument", "install-invalid"],
    ["resource-exhausted", "install-too-large"],
    ["failed-precondition", "guest-not-provisioned"],
    ["internal", "install-internal"],
  ];
  assert.deepEqual(Object.keys(GUEST_CODE_MAP).sort(), rows.map((r) => r[0]).sort());
  for (const [guestCode, want] of rows) {
    await t.step(`${guestCode} → ${want}`, async () => {
      const x = await _setup();
      x.source.published = { version: "v-1", tarball: x.good };
      x.guest.fail = new GuestInstallRefused(guestCode, "because");
      const e = await x.runner.provision().then(() => null, (e) => e);
      assert.ok(e instanceof ConfigDeliveryError && e.code === want, String(e));
      if (guestCode === "unimplemented") assert.match(e.message, /guest image too old/);
      assert.equal(x.runner.lastVersion, null);
    });
  }
  await t.step("a channel failure is guest-unreachable", async () => {
    const x = await _setup();
    x.source.published = { version: "v-1", tarball: x.good };
    x.guest.fail = new Error("stream closed");
    await assert.rejects(x.runner.provision(), code("guest-unreachable"));
  });
});

Deno.test("refresh v-1 → v-2 installs v-2 and reloads once", async () => {
  const x = await _setup();
  x.source.published = { version: "v-1", tarball: x.good };
  await x.runner.provision();
  x.source.published = { version: "v-2", tarball: await tarBundle({ "agent.yaml": "model: y\n" }) };
  assert.equal(await x.runner.refresh(), "installed");
  assert.deepEqual(x.guest.installs, ["v-1", "v-2"]);
  assert.equal(x.reloads(), 1);
  assert.equal(x.runner.lastVersion, "v-2");
  assert.deepEqual(x.source.fetches, ["", "v-1"], "the refresh fetched with ifVersion = the last version");
});

Deno.test("refresh against a version-only answer for the same version makes no install and no reload", async () => {
  const x = await _setup();
  x.source.published = { version: "v-1", tarball: x.good };
  await x.runner.provision();
  assert.equal(await x.runner.refresh(), "unchanged");
  assert.deepEqual(x.guest.installs, ["v-1"]);
  assert.equal(x.reloads(), 0);
});

Deno.test("an install failure on refresh neither reloads nor advances; a failed reload does not advance either", async () => {
  const x = await _setup();
  x.source.published = { version: "v-1", tarball: x.good };
  await x.runner.provision();
  x.source.published = { version: "v-2", tarball: x.good };
  x.guest.fail = new GuestInstallRefused("internal", "no space left on device");
  await assert.rejects(x.runner.refresh(), code("install-internal"));
  assert.equal(x.reloads(), 0);
  assert.equal(x.runner.lastVersion, "v-1");
  x.guest.fail = null;
  x.failReload(true);
  await assert.rejects(x.runner.refresh(), code("reload-failed"));
  assert.equal(x.runner.lastVersion, "v-1", "the next signal re-fetches");
  x.failReload(false);
  assert.equal(await x.runner.refresh(), "installed");
  assert.equal(x.runner.lastVersion, "v-2");
});

Deno.test("the bundle schema, row by row", async (t) => {
  const rows: { why: string; files: Record<string, string>; ok: boolean }[] = [
    { why: "agent.yaml and skills", files: { "agent.yaml": "a: 1\n", "skills/s/one.md": "# x\n" }, ok: true },
    { why: "settings.json object", files: { "settings.json": `{"a":1}` }, ok: true },
    { why: "mcp, prompts, hooks", files: { "mcp/m.json": "{}", "prompts/p.md": "p", "hooks/h": "h" }, ok: true },
    { why: "unknown top-level file", files: { "notes.txt": "x" }, ok: false },
    { why: "unknown top-level dir", files: { "etc/passwd": "x" }, ok: false },
    { why: "dot component", files: { "skills/.hidden": "x" }, ok: false },
    { why: "space in a name", files: { "skills/a b.md": "x" }, ok: false },
    { why: "json not an object", files: { "agent.json": "[1]" }, ok: false },
    { why: "json not JSON", files: { "settings.json": "{" }, ok: false },
    { why: "yaml tab indent", files: { "agent.yaml": "a:\n\tb: 1\n" }, ok: false },
    { why: "NUL in a file", files: { "prompts/p.md": "a\0b" }, ok: false },
  ];
  for (const r of rows) {
    await t.step(r.why, async () => {
      const tgz = await tarBundle(r.files);
      const got = await walk(tgz, BUNDLE_SCHEMA).then(() => null, (e) => e);
      if (r.ok) assert.equal(got, null, String(got));
      else assert.ok(got instanceof BundleSchemaError, String(got));
    });
  }
});
