/**
 * `boot.prepareRamdisk` and `boot.cleanUp` (control lane, retry-safe, 2 minutes; 000 §Kinds by lane): the site's boot
 * server offers one machine the bcd ramdisk for the lease's duration, then stops.
 *
 * `boot.prepareRamdisk`, in order:
 * 1. The payload is checked: a node id, at least one boot NIC MAC or SMBIOS system UUID, kernel and initrd as https URLs
 *    with lowercase SHA-256s, a command line ISOLINUX and iPXE can carry (it holds the machine's join token: the
 *    control plane puts it there), a lease of at most {@link MAX_LEASE_MS} (`lease_ms` 0: {@link DEFAULT_LEASE_MS}).
 *    Without a boot server (`[site] boot_listen`) it fails `no-boot-server`.
 * 2. Kernel and initrd are pulled into the image cache (hashed as they stream, kept by digest): `digest-mismatch` or
 *    `image-download-failed`.
 * 3. The virtual-media ISO is built from the cache's re-verified copies (`runtimes/site/ramdisk_iso.ts`) and stored in
 *    the cache by its own digest (`iso-build-failed`).
 * 4. The lease is written to `boot-leases.json` (durable before the result): the machine's iPXE script and ISO are
 *    served from now until `expires_at_ms`. The result names the script and ISO URLs.
 *
 * `boot.cleanUp` removes the node's lease (`removed` false when there was none): from then the machine gets 404.
 *
 * @module
 */
import type { HandlerContext, HandlerResult, KindHandler } from "../../core/commands/handlers.ts";
import { payloadOf, resultOf } from "../../core/commands/kind_payload.ts";
import { CommandFailed, InvalidPayload } from "../../core/commands/rejection.ts";
import { DownloadRefused, type ImageCache, ImageDigestMismatch, isSha256 } from "./image_cache.ts";
import { isLeaseNodeId, type LeaseBook, normalizeMac, normalizeSystemId } from "./lease_book.ts";
import { buildRamdiskIso, checkCmdline, IsoBuildFailed, type IsolinuxFiles } from "./ramdisk_iso.ts";
import { ipxePath, isoPath } from "./boot_routes.ts";

/** A lease's length when the payload says 0. */
export const DEFAULT_LEASE_MS = 60 * 60_000;
/** The longest lease. */
export const MAX_LEASE_MS = 24 * 60 * 60_000;

/** What the boot kinds need. */
export interface BootKindPorts {
  readonly cache: ImageCache;
  readonly leases: LeaseBook;
  /** The boot server's base URL as machines reach it; undefined without a boot server. */
  readonly bootUrl: string | undefined;
  /** Where ISOs are staged (a directory of the agent's, on the cache's filesystem). */
  readonly stageDir: string;
  readonly now?: () => number;
  readonly isolinux?: IsolinuxFiles;
}

interface _Checked {
  nodeId: string;
  macs: string[];
  systemIds: string[];
  kernel: { url: string; sha256: string };
  initrd: { url: string; sha256: string };
  cmdline: string;
  leaseMs: number;
}

/** The `boot.prepareRamdisk` handler. */
export function bootPrepareRamdiskHandler(ports: BootKindPorts): KindHandler {
  return {
    kind: "boot.prepareRamdisk",
    resources(command) {
      return [`boot:${_check(payloadOf("boot.prepareRamdisk", command)).nodeId}`];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const p = _check(payloadOf("boot.prepareRamdisk", ctx.command));
      const base = ports.bootUrl;
      if (base === undefined) {
        throw new CommandFailed("no-boot-server", "this site agent has no boot server ([site] boot_listen is unset)");
      }
      for (const [what, img] of [["kernel", p.kernel], ["initrd", p.initrd]] as const) {
        try {
          await ports.cache.warm(img.url, img.sha256);
        } catch (e) {
          if (e instanceof ImageDigestMismatch) throw new CommandFailed("digest-mismatch", `${what}: ${e.message}`);
          if (e instanceof DownloadRefused) throw new CommandFailed("image-download-failed", `${what}: ${e.message}`);
          throw e;
        }
      }
      const iso = await _buildIso(ports, p);
      const expires = (ports.now ?? Date.now)() + p.leaseMs;
      await ports.leases.put({
        node_id: p.nodeId,
        macs: p.macs,
        system_ids: p.systemIds,
        kernel_sha256: p.kernel.sha256,
        initrd_sha256: p.initrd.sha256,
        cmdline: p.cmdline,
        expires_at_ms: expires,
        iso_sha256: iso,
        source: "command",
      });
      ctx.logger.info({ node_id: p.nodeId, expires_at_ms: expires, iso_sha256: iso }, "ramdisk lease granted");
      const first = p.macs[0] !== undefined ? { mac: p.macs[0] } : { systemId: p.systemIds[0]! };
      return {
        result: resultOf("boot.prepareRamdisk", {
          expires_at_ms: expires,
          boot_url: `${base}${ipxePath(first)}`,
          iso_url: `${base}${isoPath(p.nodeId)}`,
        }),
      };
    },
  };
}

/** The `boot.cleanUp` handler. */
export function bootCleanUpHandler(ports: Pick<BootKindPorts, "leases">): KindHandler {
  return {
    kind: "boot.cleanUp",
    resources(command) {
      return [`boot:${_nodeId(payloadOf("boot.cleanUp", command).node_id)}`];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const nodeId = _nodeId(payloadOf("boot.cleanUp", ctx.command).node_id);
      const removed = await ports.leases.remove(nodeId);
      ctx.logger.info({ node_id: nodeId, removed }, "ramdisk lease ended");
      return { result: resultOf("boot.cleanUp", { removed }) };
    },
  };
}

async function _buildIso(ports: BootKindPorts, p: _Checked): Promise<string> {
  const stage = `${ports.stageDir}/iso-${crypto.randomUUID()}`;
  await Deno.mkdir(stage, { recursive: true, mode: 0o700 });
  try {
    for (const [name, sha] of [["kernel", p.kernel.sha256], ["initrd", p.initrd.sha256]] as const) {
      const opened = await ports.cache.open(sha);
      if (!opened) throw new CommandFailed("digest-mismatch", `the cached ${name} ${sha} no longer matches; removed`);
      await Deno.writeFile(`${stage}/${name}`, opened.file.readable, { mode: 0o600 });
    }
    try {
      await buildRamdiskIso({
        stage,
        kernel: `${stage}/kernel`,
        initrd: `${stage}/initrd`,
        cmdline: p.cmdline,
        out: `${stage}/ramdisk.iso`,
        ...(ports.isolinux ? { files: ports.isolinux } : {}),
      });
    } catch (e) {
      if (e instanceof IsoBuildFailed) throw new CommandFailed(e.reason, e.message, { cause: e });
      throw e;
    }
    return await ports.cache.adopt(`${stage}/ramdisk.iso`);
  } finally {
    await Deno.remove(stage, { recursive: true });
  }
}

function _nodeId(id: string): string {
  if (!isLeaseNodeId(id)) throw new InvalidPayload(`node_id ${JSON.stringify(id.slice(0, 200))} is not a node id`);
  return id;
}

function _check(p: {
  node_id: string;
  macs: string[];
  system_ids: string[];
  kernel_url: string;
  kernel_sha256: string;
  initrd_url: string;
  initrd_sha256: string;
  cmdline: string;
  lease_ms: number;
}): _Checked {
  const nodeId = _nodeId(p.node_id);
  const macs = p.macs.map((m) => {
    const n = normalizeMac(m);
    if (n === undefined) throw new InvalidPayload(`mac ${JSON.stringify(m.slice(0, 40))}`);
    return n;
  });
  const systemIds = p.system_ids.map((u) => {
    const n = normalizeSystemId(u);
    if (n === undefined) throw new InvalidPayload(`system id ${JSON.stringify(u.slice(0, 60))} is not a UUID`);
    return n;
  });
  if (macs.length + systemIds.length === 0) {
    throw new InvalidPayload("a lease names the machine: at least one MAC or system id");
  }
  if (macs.length + systemIds.length > 64) throw new InvalidPayload("more than 64 MACs and system ids");
  const image = (what: string, url: string, sha256: string) => {
    if (!url.startsWith("https://")) {
      throw new InvalidPayload(`${what}_url must be https, not ${JSON.stringify(url.slice(0, 200))}`);
    }
    if (!isSha256(sha256)) throw new InvalidPayload(`${what}_sha256 is not 64 lowercase hex digits`);
    return { url, sha256 };
  };
  const bad = checkCmdline(p.cmdline);
  if (bad) throw new InvalidPayload(bad);
  const leaseMs = p.lease_ms === 0 ? DEFAULT_LEASE_MS : p.lease_ms;
  if (leaseMs > MAX_LEASE_MS) throw new InvalidPayload(`lease_ms ${p.lease_ms} is over ${MAX_LEASE_MS}`);
  return {
    nodeId,
    macs,
    systemIds,
    kernel: image("kernel", p.kernel_url, p.kernel_sha256),
    initrd: image("initrd", p.initrd_url, p.initrd_sha256),
    cmdline: p.cmdline,
    leaseMs,
  };
}
