/**
 * The host's kind handlers, ready for a role's wiring: `inventory.refresh` over the sysfs inventory (and the GPU tool
 * when the build has one), `logs.collect` over the daemon's log ring and the journal summary with the HTTPS uploader,
 * and `node.reboot` through the init system.
 *
 * @example
 * ```ts
 * const ring = new LogRing();
 * const log = createLogger({ destination: ring.tee(stderr) });
 * const registry = new HandlerRegistry();
 * for (const h of hostKindHandlers({ journal, logRing: ring })) registry.register(h);
 * ```
 *
 * @module
 */
// The handlers' own modules, not kind_handlers/mod.ts: that also loads the ramdisk's disk.wipe, deploy.image and
// boot.kexec, and the node's instance kinds, at every agent's start (issue 24).
import {
  type GpuInventorySource,
  type HostInventoryReader,
  inventoryRefreshHandler,
} from "../../core/commands/kind_handlers/inventory_refresh.ts";
import { daemonLogSource, journalSummarySource } from "../../core/commands/kind_handlers/log_sources.ts";
import type { LogRing } from "../../core/commands/kind_handlers/log_ring.ts";
import { logsCollectHandler } from "../../core/commands/kind_handlers/logs_collect.ts";
import { nodeRebootHandler, type Rebooter } from "../../core/commands/kind_handlers/node_reboot.ts";
import type { KindHandler } from "../../core/commands/handlers.ts";
import type { Journal } from "../../core/journal/mod.ts";
import { type HostInventoryRoots, SysfsHostInventory } from "./inventory.ts";
import { InitRebooter } from "./rebooter.ts";
import type { TransferLimits } from "./https_put.ts";
import { lazyHttpsUploader } from "./lazy_uploader.ts";

/** What the host handlers need. */
export interface HostKindOptions {
  readonly journal: Pick<Journal, "meta" | "commandCounts" | "eventTotals">;
  readonly logRing: LogRing;
  readonly gpus?: GpuInventorySource;
  /** Extra CAs for uploads (tests, private object stores); the system roots otherwise. */
  readonly caCerts?: string[];
  readonly transferLimits?: Partial<TransferLimits>;
  readonly rebooter?: Rebooter;
  readonly roots?: HostInventoryRoots;
  /** The host inventory reader; the sysfs one over `roots` by default (the sim passes its simulated host). */
  readonly host?: HostInventoryReader;
}

/** The three host handlers. */
export function hostKindHandlers(o: HostKindOptions): KindHandler[] {
  return [
    inventoryRefreshHandler({
      host: o.host ?? new SysfsHostInventory(o.roots),
      ...(o.gpus ? { gpus: o.gpus } : {}),
    }),
    logsCollectHandler({
      sources: [daemonLogSource(o.logRing), journalSummarySource(o.journal)],
      uploader: lazyHttpsUploader({
        ...(o.caCerts ? { caCerts: o.caCerts } : {}),
        ...(o.transferLimits ? { limits: o.transferLimits } : {}),
      }),
    }),
    nodeRebootHandler({ rebooter: o.rebooter ?? new InitRebooter() }),
  ];
}
