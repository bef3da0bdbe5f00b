/**
 * The `site` role's entry point: one per site. Wiring only. Like the node, the site agent runs unprivileged with
 * scoped permission flags (`roles/permissions.ts`: its data dir `/var/lib/bcd-site`, `/etc/bcd` read, the helper's
 * socket, network) beside the root `bcd-helper` (000 §privilege separation), which serves it with `[helper] role =
 * "site"`: the boot id, the host inventory of `inventory.refresh` and `node.reboot` go to the helper's socket
 * (`[helper] socket`, default `/run/bcd/helper.sock`; access by the socket's group `[helper] node_group`), and the
 * agent refuses to start when the helper cannot be reached. `logs.collect` uploads over HTTPS from the agent itself.
 * The Redfish kinds `bmc.query`, `bmc.power`, `bmc.boot`, `bmc.rotate`, `bmc.firmware` and `bmc.storage` (`runtimes/redfish/`) talk to the BMCs over
 * the network from the agent itself (no helper op: a BMC is a network peer, not a host effect), take their
 * credentials from the session's SecretRequest broker and record every BMC host in `<data dir>/bmc-hosts.json`.
 * `site.httpProxy` (`runtimes/site/`) sends one request to an agentless machine after every guard of the seed (never
 * a BMC: the hosts of `bmc-hosts.json` by name and address, `/redfish`, `[site] bmc_networks`; only the target node's
 * `proxy_targets`; a non-GET only under its batch leaf). The `site` section's converger pulls `cache_images` into the
 * image cache (`<data dir>/image-cache`, by digest; downloads trust `[site] ca_file` besides the system roots), and
 * with `[site] boot_listen` the boot server serves the cache over HTTP on the boot network (re-verified before every
 * serve); `bmc.firmware` takes its image through the cache and offers the BMC the boot server's copy (`[site]
 * boot_url`, default `http://<boot_listen>`) or pushes the cached copy to the BMC itself.
 * The server lives as long as the process. `boot.prepareRamdisk` leases a machine (by MAC and/or SMBIOS UUID) the bcd
 * ramdisk: kernel and initrd pulled into the cache, a bootable ISO built (genisoimage; ISOLINUX for BIOS, systemd-boot on
 * a FAT image for UEFI), the lease written to
 * `<data dir>/boot-leases.json`; the boot server answers its iPXE script and ISO until the lease ends or
 * `boot.cleanUp` removes it (`runtimes/site/boot_kinds.ts`).
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
import { bootHttpHandler, type BootServer, serveBoot } from "../runtimes/site/boot_http.ts";
import { firmwareCache } from "../runtimes/site/firmware_cache.ts";
import { ImageCache } from "../runtimes/site/image_cache.ts";
import { SiteConverger } from "../runtimes/site/site_converger.ts";
import { bootCleanUpHandler, bootPrepareRamdiskHandler } from "../runtimes/site/boot_kinds.ts";
import { leaseRoutes } from "../runtimes/site/boot_routes.ts";
import { LeaseBook } from "../runtimes/site/lease_book.ts";
import { agentCommands, helperOf, type WiringContext } from "./_agent_cli.ts";
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
      "boot.prepareRamdisk",
      "boot.cleanUp",
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
      const { cache, bootUrl } = _site(ctx);
      for (
        const h of bmcKindHandlers({
          secrets: ctx.secrets,
          hosts: bmcHosts,
          firmware: { cache: firmwareCache(cache, bootUrl) },
        })
      ) reg.register(h);
      const ports = { cache, leases: _site(ctx).leases, bootUrl, stageDir: `${ctx.dataDir}/image-cache/tmp` };
      reg.register(bootPrepareRamdiskHandler(ports));
      reg.register(bootCleanUpHandler(ports));
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
    convergers: (ctx, _events, _conditions, peers) => [
      daemonConverger(ctx),
      new SiteConverger({ cache: _site(ctx).cache, leases: _site(ctx).leases, wake: peers.wake }),
    ],
    onWelcome: confirmRelease,
  }),
  doctor: doctorCommand("site", "/var/lib/bcd-site"),
};

interface _SiteParts {
  cache: ImageCache;
  leases: LeaseBook;
  server?: BootServer;
  bootUrl?: string;
}
const _parts = new WeakMap<WiringContext, _SiteParts>();

/**
 * The image cache, the lease book and the boot server of a site agent, made once per wiring (handlers and convergers
 * share them).
 */
function _site(ctx: WiringContext): _SiteParts {
  let p = _parts.get(ctx);
  if (p) return p;
  const s = ctx.config.site;
  const cache = new ImageCache({
    dir: `${ctx.dataDir}/image-cache`,
    ...(s.caFile !== undefined ? { caCerts: [Deno.readTextFileSync(s.caFile)] } : {}),
    log: ctx.log,
  });
  const leases = new LeaseBook(ctx.dataDir);
  let url = s.bootUrl;
  const boot = leaseRoutes({ leases, cache, baseUrl: () => url ?? "", log: ctx.log });
  const server = s.bootListen !== undefined
    ? serveBoot(s.bootListen, bootHttpHandler({ cache, boot, log: ctx.log }), ctx.log)
    : undefined;
  url ??= server?.url;
  p = { cache, leases, ...(server ? { server } : {}), ...(url !== undefined ? { bootUrl: url } : {}) };
  _parts.set(ctx, p);
  return p;
}

if (import.meta.main) {
  Deno.exit(await runCli("site", Deno.args, COMMANDS));
}
