import assert from "node:assert/strict";
import { kindsForRole, ROLES } from "../core/commands/kinds.ts";
import { HandlerRegistry } from "../core/commands/handlers.ts";
import { FakeHandler } from "../core/commands/fake_handlers.ts";
import { checkHandledKinds } from "./_agent_cli.ts";
import { AGENT_VERSION, PROTOCOLS } from "../core/version.ts";
import { HELPER_OPS, HELPER_OPS_BY_ROLE, HELPER_PROTOCOL_VERSION } from "../core/helper/mod.ts";

const ROOT = new URL("../", import.meta.url).pathname;

async function task(role: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["task", "--quiet", role, ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("`version` of every role lists exactly its kinds of the seed's table, row by row", async (t) => {
  for (const role of ROLES) {
    await t.step(role, async () => {
      const r = await task(role, "version");
      assert.equal(r.code, 0, r.stderr);
      const v = JSON.parse(r.stdout) as {
        role: string;
        version: string;
        build: string;
        protocols: Record<string, number>;
        kinds: { kind: string; lane: string; flags: string[]; handled: boolean }[];
      };
      assert.equal(v.role, role);
      assert.equal(v.version, AGENT_VERSION);
      assert.equal(typeof v.build, "string");
      assert.deepEqual(v.protocols, PROTOCOLS);
      const want = kindsForRole(role).map((k) => ({ kind: k.kind, lane: k.lane, flags: [...k.flags] }));
      assert.equal(v.kinds.length, want.length);
      for (let i = 0; i < want.length; i++) {
        const { handled, ...row } = v.kinds[i]!;
        assert.deepEqual(row, want[i], `row ${i} of ${role}`);
        assert.equal(typeof handled, "boolean", `row ${i} of ${role} says whether it is handled`);
      }
    });
  }
});

Deno.test("`version` says which kinds each role's build handles: the site handles every site kind", async () => {
  const handled = async (role: string) => {
    const r = await task(role, "version");
    assert.equal(r.code, 0, r.stderr);
    const v = JSON.parse(r.stdout) as { kinds: { kind: string; handled: boolean }[] };
    return Object.fromEntries(v.kinds.map((k) => [k.kind, k.handled]));
  };
  const site = await handled("site");
  assert.equal(site["inventory.refresh"], true);
  for (
    const k of [
      "bmc.query",
      "bmc.power",
      "bmc.boot",
      "bmc.rotate",
      "bmc.firmware",
      "bmc.storage",
      "site.httpProxy",
      "boot.prepareRamdisk",
      "boot.cleanUp",
    ]
  ) {
    assert.equal(site[k], true, k);
  }
  const node = await handled("node");
  for (
    const k of [
      "inventory.refresh",
      "logs.collect",
      "node.reboot",
      "gpu.reset",
      "diag.nvml",
      "instance.snapshot",
      "instance.migrate",
    ]
  ) {
    assert.equal(node[k], true, k);
  }
  assert.equal(node["driver.invoke"], true, "driver plugins run through the helper");
  assert.equal(site["driver.invoke"], true);
  assert.deepEqual(Object.values(await handled("guest")), []);
});

Deno.test("a role whose registry and declared handled kinds differ refuses to start, naming both", () => {
  const reg = new HandlerRegistry().register(new FakeHandler("inventory.refresh"));
  assert.throws(
    () => checkHandledKinds({ role: "site", handles: ["inventory.refresh", "bmc.query"] }, reg),
    /registers handlers for \[inventory.refresh\] but declares \[bmc.query, inventory.refresh\]/,
  );
  checkHandledKinds({ role: "site", handles: ["inventory.refresh"] }, reg);
});

Deno.test("the CLI exits 2 with a one-line reason for an unknown subcommand or flag, 0 for help", async (t) => {
  await t.step("unknown subcommand", async () => {
    const r = await task("node", "frobnicate");
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim().split("\n").length, 1);
    assert.match(r.stderr, /unknown command "frobnicate"/);
  });
  await t.step("unknown flag", async () => {
    const r = await task("guest", "version", "--frob");
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--frob/);
  });
  await t.step("no command", async () => {
    const r = await task("site");
    assert.equal(r.code, 2);
  });
  await t.step("help", async () => {
    const r = await task("ramdisk", "help");
    assert.equal(r.code, 0);
    assert.match(r.stdout, /version/);
    assert.match(r.stdout, /help/);
  });
});

Deno.test("`bcd-helper version` names the helper, its protocol version, its ops and each role's; `serve` is in its help", async () => {
  const r = await task("helper", "version");
  assert.equal(r.code, 0, r.stderr);
  const v = JSON.parse(r.stdout) as {
    role: string;
    protocols: Record<string, number>;
    kinds: unknown[];
    ops: string[];
    ops_by_role: Record<string, string[]>;
  };
  assert.equal(v.role, "helper");
  assert.equal(v.protocols.helper, HELPER_PROTOCOL_VERSION);
  assert.deepEqual(v.protocols, PROTOCOLS);
  assert.deepEqual(v.kinds, []);
  assert.deepEqual(v.ops, [...HELPER_OPS]);
  assert.deepEqual(v.ops_by_role, JSON.parse(JSON.stringify(HELPER_OPS_BY_ROLE)));
  const h = await task("helper", "help");
  assert.equal(h.code, 0);
  assert.match(h.stdout, /serve/);
  const bad = await task("helper", "serve", "--socket", "relative.sock", "--config", "/nonexistent.toml");
  assert.equal(bad.code, 2, "a missing config file is a usage error");
});

Deno.test("`bcd-vm version` names the program, its build and protocols and no kinds; `help` lists its commands", async () => {
  const r = await task("vm", "version");
  assert.equal(r.code, 0, r.stderr);
  const v = JSON.parse(r.stdout) as { role: string; version: string; protocols: unknown; kinds: unknown[] };
  assert.deepEqual([v.role, v.version, v.kinds], ["vm", AGENT_VERSION, []]);
  assert.deepEqual(v.protocols, PROTOCOLS);
  const bare = await task("vm");
  assert.deepEqual([bare.code, JSON.parse(bare.stdout)], [0, v], "without arguments: the contract, as version");
  const h = await task("vm", "help");
  assert.equal(h.code, 0, h.stderr);
  for (const c of ["stage", "launch", "reattach", "stop", "probe"]) assert.match(h.stdout, new RegExp(`\\n  ${c} `));
  const sub = await task("vm", "launch", "/store", "--help");
  assert.deepEqual([sub.code, sub.stdout.startsWith("bcd-vm launch: ")], [0, true], sub.stdout);
  assert.equal((await task("vm", "version", "extra")).code, 2);
  assert.equal((await task("vm", "nonsense")).code, 2);
});
