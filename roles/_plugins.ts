/**
 * Driver plugins on the privilege-separated agents (node, site, ramdisk): one {@link PluginHost} per daemon over the
 * root helper (`HelperPluginSource`: the helper starts each plugin from its `[plugins] dir` as `[plugins] user` and
 * relays its frames), and `driver.invoke` over it. The agent itself runs no plugin program. Wiring only.
 *
 * @module
 */
import { DEFAULT_KIND_TIMEOUT_MS } from "../core/commands/kinds.ts";
import type { KindHandler } from "../core/commands/handlers.ts";
import { driverInvokeHandler, PluginHost, PluginRuntime, RUNTIME_OPERATION } from "../core/plugins/mod.ts";
import { HelperError } from "../core/helper/mod.ts";
import { AGENT_VERSION } from "../core/version.ts";
import { HelperPluginSource } from "../runtimes/helper/plugin_source.ts";
import { helperOf, type WiringContext } from "./_agent_cli.ts";

const _hosts = new WeakMap<WiringContext, PluginHost>();

/** The daemon's plugin host (made on first use). */
export function pluginHostOf(ctx: WiringContext): PluginHost {
  let h = _hosts.get(ctx);
  if (!h) {
    h = new PluginHost({
      source: new HelperPluginSource(helperOf(ctx)),
      bcdVersion: AGENT_VERSION,
      log: ctx.log.child({ part: "plugins" }),
      maxInvokeMs: DEFAULT_KIND_TIMEOUT_MS,
    });
    _hosts.set(ctx, h);
  }
  return h;
}

/**
 * The runtime plugins of the helper's directory (those whose manifest lists `runtime`), each an `InstanceRuntime`
 * named by the plugin, read once at start; a plugin named like a built-in runtime (`taken`) is skipped and logged, and
 * a helper that cannot list its plugins gives none (logged).
 */
export async function pluginRuntimes(ctx: WiringContext, taken: readonly string[]): Promise<PluginRuntime[]> {
  let manifests;
  try {
    manifests = await pluginHostOf(ctx).list();
  } catch (e) {
    if (!(e instanceof HelperError)) throw e;
    ctx.log.warn({ err: e.message }, "plugins: the helper did not list its plugins; no runtime plugin");
    return [];
  }
  const out: PluginRuntime[] = [];
  for (const m of manifests) {
    if (!m.operations.includes(RUNTIME_OPERATION)) continue;
    if (taken.includes(m.name)) {
      ctx.log.warn({ plugin: m.name }, "plugins: a runtime plugin named like a built-in runtime is skipped");
      continue;
    }
    out.push(new PluginRuntime(pluginHostOf(ctx), m.name));
    ctx.log.info({ plugin: m.name, version: m.version }, "instances: runtime plugin on");
  }
  return out;
}

/** `driver.invoke` over the daemon's plugin host. */
export function driverInvoke(ctx: WiringContext): KindHandler {
  return driverInvokeHandler(pluginHostOf(ctx));
}
