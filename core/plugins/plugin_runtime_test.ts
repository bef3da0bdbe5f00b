import { silentLogger } from "../log/mod.ts";
import { PluginHost } from "./host.ts";
import { pluginRuntimeContract, pluginRuntimeTapRule } from "./runtime_contract_testing.ts";
import { type Sample, writeSamplePlugin } from "./sample_testing.ts";

async function hosted(s: Sample = {}) {
  const dir = await Deno.makeTempDir({ prefix: "bcd-runtime-plugins-" });
  await writeSamplePlugin(dir, s);
  const host = new PluginHost({ dir, bcdVersion: "0.0.0-test", log: silentLogger() });
  return {
    host,
    async [Symbol.asyncDispose]() {
      await host.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("InstanceRuntime contract, runtime plugin (started by this process): list, apply, remove", async (t) => {
  await using h = await hosted();
  await pluginRuntimeContract(t, h.host);
});

Deno.test("a runtime plugin that does not create a guarded instance's taps: stopped and failed, the seed's message", async () => {
  await using h = await hosted({ mode: "notaps" });
  await pluginRuntimeTapRule(h.host);
});
