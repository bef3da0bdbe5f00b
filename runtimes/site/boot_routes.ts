/**
 * The boot server's per-machine answers (the routes under `/boot/` of `runtimes/site/boot_http.ts`), obeying the
 * leases of {@link LeaseBook}: a machine without a live lease gets nothing to boot (404), whatever it asks.
 *
 * - `GET /boot/ipxe?mac=<mac>&uuid=<uuid>`: the iPXE script of the lease whose machine has that MAC or SMBIOS UUID:
 *   `kernel` and `initrd` from the image cache by digest, with the lease's command line. The site's DHCP hands PXE
 *   clients iPXE and iPXE the chain URL `http://<boot>/boot/ipxe?mac=${net0/mac}&uuid=${uuid}` (Tinkerbell's and
 *   Ironic's iPXE flow; DHCP is not bcd's).
 * - `GET /boot/iso/<node id>.iso`: the lease's bootable ISO (`runtimes/site/ramdisk_iso.ts`), served from the image
 *   cache, re-verified before the serve, for virtual-media boot (`bmc.boot` inserts this URL).
 *
 * @module
 */
import type { Logger } from "../../core/log/mod.ts";
import { type BootRoutes, imagePath } from "./boot_http.ts";
import type { ImageCache } from "./image_cache.ts";
import type { LeaseBook } from "./lease_book.ts";

/** The path of a node's lease ISO on the boot server. */
export function isoPath(nodeId: string): string {
  return `/boot/iso/${encodeURIComponent(nodeId)}.iso`;
}

/** The iPXE script path for a machine. */
export function ipxePath(by: { mac?: string; systemId?: string }): string {
  const q = new URLSearchParams();
  if (by.mac) q.set("mac", by.mac);
  if (by.systemId) q.set("uuid", by.systemId);
  return `/boot/ipxe?${q}`;
}

/** The `/boot/` routes over the lease book and the image cache; `baseUrl` is the server's URL as machines reach it. */
export function leaseRoutes(
  o: { leases: LeaseBook; cache: ImageCache; baseUrl: () => string; log: Logger },
): BootRoutes {
  return {
    async answer(path: string, req: Request): Promise<Response | undefined> {
      if (path === "/boot/ipxe") {
        const q = new URL(req.url).searchParams;
        const mac = q.get("mac") ?? undefined;
        const systemId = q.get("uuid") ?? undefined;
        const lease = await o.leases.find({ ...(mac ? { mac } : {}), ...(systemId ? { systemId } : {}) });
        if (!lease) {
          o.log.info({ mac, uuid: systemId }, "a machine without a live lease asked for a boot script");
          return new Response("no lease\n", { status: 404 });
        }
        o.log.info({ node_id: lease.node_id, mac, uuid: systemId }, "boot script served");
        const base = o.baseUrl();
        const script = [
          "#!ipxe",
          `kernel ${base}${imagePath(lease.kernel_sha256)} initrd=initrd ${lease.cmdline}`.trimEnd(),
          `initrd --name initrd ${base}${imagePath(lease.initrd_sha256)}`,
          "boot",
          "",
        ].join("\n");
        return new Response(req.method === "HEAD" ? null : script, { headers: { "content-type": "text/plain" } });
      }
      const m = /^\/boot\/iso\/([^/]+)\.iso$/.exec(path);
      if (m) {
        const lease = await o.leases.find({ nodeId: decodeURIComponent(m[1]!) });
        if (!lease?.iso_sha256) return new Response("no lease\n", { status: 404 });
        const opened = await o.cache.open(lease.iso_sha256);
        if (!opened) return new Response("not in the cache\n", { status: 404 });
        const headers = { "content-length": String(opened.size), "content-type": "application/x-iso9660-image" };
        if (req.method === "HEAD") {
          opened.file.close();
          return new Response(null, { headers });
        }
        o.log.info({ node_id: lease.node_id, sha256: lease.iso_sha256 }, "lease ISO served");
        return new Response(opened.file.readable, { headers });
      }
      return undefined;
    },
  };
}
