/**
 * Driver plugins on the privilege-separated agents (node, site, ramdisk): one {@link PluginHost} per daemon over the
 * root helper (`HelperPluginSource`: the helper starts each plugin from its `[plugins] dir` as `[plugins] user` and
 * relays its frames), and `driver.invoke` over it. The agent itself runs no plugin program. Wiring only.
 *
 * @module
 */
import { DEFAULT_KIND_TIMEOUT_MS } from "../core/commands/kinds.ts";
import type { KindHandler } from "../core/commands/handlers.ts";
import { driverInvokeHandler, PluginHost } from "../core/plugins/mod.ts";
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

/** `driver.invoke` over the daemon's plugin host. */
export function driverInvoke(ctx: WiringContext): KindHandler {
  return driverInvokeHandler(pluginHostOf(ctx));
}
