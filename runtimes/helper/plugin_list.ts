/**
 * The helper's plugins, listed (`plugin.list`): what `HelperPluginSource.list` answers, for the agents' start, which
 * looks for runtime plugins without loading the plugin host's code (issue 24).
 *
 * @module
 */
import type { PluginManifest } from "../../core/plugins/protocol.ts";
import type { HelperClient } from "./client.ts";

/** The manifests of the plugins in the helper's `[plugins] dir` (those that parse). */
export async function listHelperPlugins(client: HelperClient): Promise<PluginManifest[]> {
  return [...(await client.call("plugin.list", {})).plugins];
}
