/**
 * The `site` role's entry point: one per site. Wiring only. Like the node, the site agent runs unprivileged with
 * scoped permission flags (`roles/permissions.ts`: its data dir `/var/lib/bcd-site`, `/etc/bcd` read, the helper's
 * socket, network) beside the root `bcd-helper` (000 §privilege separation), which serves it with `[helper] role =
 * "site"`: the boot id, the host inventory of `inventory.refresh` and `node.reboot` go to the helper's socket
 * (`[helper] socket`, default `/run/bcd/helper.sock`; access by the socket's group `[helper] node_group`), and the
 * agent refuses to start when the helper cannot be reached. `logs.collect` uploads over HTTPS from the agent itself.
 * The Redfish kinds `bmc.query`, `bmc.power`, `bmc.boot`, `bmc.rotate` and `bmc.firmware` (`runtimes/redfish/`) talk to the BMCs over
 * the network from the agent itself (no helper op: a BMC is a network peer, not a host effect), take their
 * credentials from the session's SecretRequest broker and record every BMC host in `<data dir>/bmc-hosts.json`.
 * `site.httpProxy` (`runtimes/site/`) sends one request to an agentless machine after every guard of the seed (never
 * a BMC: the hosts of `bmc-hosts.json` by name and address, `/redfish`, `[site] bmc_networks`; only the target node's
 * `proxy_targets`; a non-GET only under its batch leaf). `bmc.storage`, `boot.*` and the `site` section's
 * converger land with the rest of issue 18; until then they are refused `UNSUPPORTED`.
 *
 * @module
 */
import { HandlerRegistry } from "../core/commands/handlers.ts";
import { DEFAULT_HELPER_SOCKET } from "../core/helper/mod.ts";
import { hostKindHandlers } from "../runtimes/host/mod.ts";
import { HelperHostInventory, HelperRebooter } from "../runtimes/helper/ports.ts"; // not mod.ts: the helper server stays out
import { BmcHostBook } from "../runtimes/redfish/bmc_hosts.ts";
import { BMC_KINDS, bmcKindHandlers } from "../runtimes/redfish/kinds/mod.ts";
import { resolveHost } from "../runtimes/site/dns.ts";
import { siteHttpProxyHandler } from "../runtimes/site/http_proxy.ts";
import { parseBmcNetworks } from "../runtimes/site/proxy_guard.ts";
import { agentCommands, helperOf } from "./_agent_cli.ts";
import { driverInvoke } from "./_plugins.ts";
import { runCli, type Subcommand } from "./_cli.ts";
import { doctorCommand } from "./doctor_cli.ts";
import { confirmRelease, daemonConverger, daemonUpgrade } from "./_self_update.ts";

/** The `site` role's subcommands beyond `version` and `help`. */
export const COMMANDS: Record<string, Subcommand> = {
  ...agentCommands({
    role: "site",
    handles: [
      "inventory.refresh",
      "logs.collect",
      "node.reboot",
      ...BMC_KINDS,
      "site.httpProxy",
      "daemon.upgrade",
      "driver.invoke",
    ],
    defaultDataDir: "/var/lib/bcd-site",
    helperSocket: (config) => config.helper.socket ?? DEFAULT_HELPER_SOCKET,
    handlers(ctx) {
      const helper = helperOf(ctx);
      const reg = new HandlerRegistry();
      for (
        const h of hostKindHandlers({
          journal: ctx.journal,
          logRing: ctx.logRing,
          host: new HelperHostInventory(helper),
          rebooter: new HelperRebooter(helper),
        })
      ) reg.register(h);
      const bmcHosts = new BmcHostBook(ctx.dataDir);
      for (const h of bmcKindHandlers({ secrets: ctx.secrets, hosts: bmcHosts })) reg.register(h);
      reg.register(siteHttpProxyHandler({
        bmcHosts,
        resolve: resolveHost,
        bmcNetworks: parseBmcNetworks(ctx.config.site.bmcNetworks),
        proxyTargets: () => ctx.agent.spec()?.site?.proxy_targets ?? [],
        quorumEnforced: () => ctx.agent.quorumEnforced(),
      }));
      reg.register(daemonUpgrade(ctx));
      return reg.register(driverInvoke(ctx));
    },
    convergers: (ctx) => [daemonConverger(ctx)],
    onWelcome: confirmRelease,
  }),
  doctor: doctorCommand("site", "/var/lib/bcd-site"),
};

if (import.meta.main) {
  Deno.exit(await runCli("site", Deno.args, COMMANDS));
}
