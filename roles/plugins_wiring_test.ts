/**
 * The agents' plugin wiring (`roles/_plugins.ts`) over a real in-process helper and its plugins directory: the start's
 * listing finds the runtime plugins (skipping other plugins and one named like a built-in runtime) without the
 * plugin host, which loads only for a runtime plugin or a `driver.invoke`; a helper that cannot list gives none.
 */
import assert from "node:assert/strict";
import { loadAgentConfig } from "../core/config/agent_config.ts";
import { memoryLogger } from "../core/log/mod.ts";
import { PluginRuntime } from "../core/plugins/plugin_runtime.ts";
import { startTestHelper } from "../runtimes/helper/helper_testing.ts";
import type { WiringContext } from "./_agent_cli.ts";
import { pluginHostOf, pluginRuntimes } from "./_plugins.ts";

async function plugin(dir: string, name: string, operations: string[]): Promise<void> {
  await Deno.mkdir(`${dir}/${name}`, { recursive: true });
  const manifest = { name, version: "1.0.0", protocol: 1, executable: "run", operations };
  await Deno.writeTextFile(`${dir}/${name}/manifest.json`, JSON.stringify(manifest));
  await Deno.writeTextFile(`${dir}/${name}/run`, "#!/bin/sh\nexit 0\n", { mode: 0o755 });
}

async function wiring(plugins: (dir: string) => Promise<void>) {
  const helper = await startTestHelper();
  await Deno.mkdir(`${helper.root}/plugins`, { recursive: true });
  await plugins(`${helper.root}/plugins`);
  const { logger, lines } = memoryLogger("info");
  const ctx = { config: loadAgentConfig(""), dataDir: helper.root, log: logger, helper: helper.client } as Partial<
    WiringContext
  > as WiringContext;
  return { helper, ctx, lines };
}

Deno.test("pluginRuntimes: the runtime plugins of the helper's directory, in name order; others and a built-in's name skipped", async () => {
  const { helper, ctx, lines } = await wiring(async (dir) => {
    await plugin(dir, "ipmi", ["power"]);
    await plugin(dir, "zvm", ["runtime"]);
    await plugin(dir, "firecracker", ["runtime", "power"]);
    await plugin(dir, "libvirt-kvm", ["runtime"]);
  });
  try {
    const runtimes = await pluginRuntimes(ctx, ["libvirt-kvm", "cloud-hypervisor"]);
    assert.ok(runtimes.every((r) => r instanceof PluginRuntime));
    assert.deepEqual(runtimes.map((r) => r.name), ["firecracker", "zvm"]);
    const said = lines.map((l) => [l.msg, l.plugin]);
    assert.deepEqual(said.filter(([m]) => /runtime plugin/.test(String(m))), [
      ["plugins: a runtime plugin named like a built-in runtime is skipped", "libvirt-kvm"],
      ["instances: runtime plugin on", "firecracker"],
      ["instances: runtime plugin on", "zvm"],
    ]);
    assert.equal(await pluginHostOf(ctx), await pluginHostOf(ctx), "one host per daemon");
  } finally {
    await helper.close();
  }
});

Deno.test("pluginRuntimes: none without runtime plugins, and none (logged) when the helper cannot list", async (t) => {
  await t.step("no runtime plugin", async () => {
    const { helper, ctx } = await wiring((dir) => plugin(dir, "ipmi", ["power"]));
    try {
      assert.deepEqual(await pluginRuntimes(ctx, []), []);
    } finally {
      await helper.close();
    }
  });
  await t.step("the helper is gone", async () => {
    const { helper, ctx, lines } = await wiring((dir) => plugin(dir, "zvm", ["runtime"]));
    await helper.close();
    assert.deepEqual(await pluginRuntimes(ctx, []), []);
    assert.ok(lines.some((l) => l.msg === "plugins: the helper did not list its plugins; no runtime plugin"));
  });
});
