/**
 * Driver plugins on the privilege-separated agents (node, site, ramdisk): one {@link PluginHost} per daemon over the
 * root helper (`HelperPluginSource`: the helper starts each plugin from its `[plugins] dir` as `[plugins] user` and
 * relays its frames), and `driver.invoke` over it. The agent itself runs no plugin program. Wiring only.
 *
 * The host's code (the host, its source over the helper, the plugin runtime) loads on first use: a `driver.invoke`,
 * or a runtime plugin the start's listing finds (issue 24: a host without plugins never loads it).
 *
 * @module
 */
import { DEFAULT_KIND_TIMEOUT_MS } from "../core/commands/kinds.ts";
import type { KindHandler } from "../core/commands/handlers.ts";
import { driverInvokeHandler } from "../core/plugins/driver_invoke.ts";
import type { PluginHost } from "../core/plugins/host.ts";
import type { PluginRuntime } from "../core/plugins/plugin_runtime.ts";
import { type PluginManifest, RUNTIME_OPERATION } from "../core/plugins/protocol.ts";
import { HelperError } from "../core/helper/mod.ts";
import { AGENT_VERSION } from "../core/version.ts";
import { loadOnce } from "../core/util/load_once.ts";
import { listHelperPlugins } from "../runtimes/helper/plugin_list.ts";
import { helperOf, type WiringContext } from "./_agent_cli.ts";

const _hosts = new WeakMap<WiringContext, () => Promise<PluginHost>>();

/** The daemon's plugin host, made (its code loaded) on first use; a load that fails is tried again by the next use. */
export function pluginHostOf(ctx: WiringContext): Promise<PluginHost> {
  let h = _hosts.get(ctx);
  if (!h) {
    h = loadOnce(async () => {
      const [{ PluginHost }, { HelperPluginSource }] = await Promise.all([
        import("../core/plugins/host.ts"),
        import("../runtimes/helper/plugin_source.ts"),
      ]);
      return new PluginHost({
        source: new HelperPluginSource(helperOf(ctx)),
        bcdVersion: AGENT_VERSION,
        log: ctx.log.child({ part: "plugins" }),
        maxInvokeMs: DEFAULT_KIND_TIMEOUT_MS,
      });
    });
    _hosts.set(ctx, h);
  }
  return h();
}

/**
 * The runtime plugins of the helper's directory (those whose manifest lists `runtime`), each an `InstanceRuntime`
 * named by the plugin, read once at start; a plugin named like a built-in runtime (`taken`) is skipped and logged, and
 * a helper that cannot list its plugins gives none (logged).
 */
export async function pluginRuntimes(ctx: WiringContext, taken: readonly string[]): Promise<PluginRuntime[]> {
  let manifests: PluginManifest[];
  try {
    manifests = await listHelperPlugins(helperOf(ctx));
  } catch (e) {
    if (!(e instanceof HelperError)) throw e;
    ctx.log.warn({ err: e.message }, "plugins: the helper did not list its plugins; no runtime plugin");
    return [];
  }
  const runtimes: PluginManifest[] = [];
  for (const m of manifests) {
    if (!m.operations.includes(RUNTIME_OPERATION)) continue;
    if (taken.includes(m.name)) {
      ctx.log.warn({ plugin: m.name }, "plugins: a runtime plugin named like a built-in runtime is skipped");
      continue;
    }
    runtimes.push(m);
  }
  if (runtimes.length === 0) return [];
  const [host, { PluginRuntime }] = await Promise.all([
    pluginHostOf(ctx),
    import("../core/plugins/plugin_runtime.ts"),
  ]);
  return runtimes.map((m) => {
    ctx.log.info({ plugin: m.name, version: m.version }, "instances: runtime plugin on");
    return new PluginRuntime(host, m.name);
  });
}

/** `driver.invoke` over the daemon's plugin host. */
export function driverInvoke(ctx: WiringContext): KindHandler {
  return driverInvokeHandler({
    invoke: async (name, operation, input, signal) => (await pluginHostOf(ctx)).invoke(name, operation, input, signal),
  });
}
