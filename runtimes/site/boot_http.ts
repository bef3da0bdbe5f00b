/**
 * The site's HTTP server on its boot network address (`[site] boot_listen`): what machines fetch while they boot and
 * what a BMC pulls for virtual media or a firmware update. Plain HTTP, as PXE/iPXE firmware and BMCs expect on the
 * provisioning network (Ironic's and Tinkerbell's boot servers do the same); what it serves is bound by digest, not by
 * the transport.
 *
 * Routes (GET and HEAD; anything else 405):
 * - `/images/sha256/<hex>`: a cached image, re-verified before it is served ({@link ImageCache.open}); 404 when it is
 *   not stored or no longer matches its digest.
 * - the routes of {@link BootRoutes} (`/boot/...`) when given: the boot server's per-machine answers.
 *
 * @module
 */
import type { Logger } from "../../core/log/mod.ts";
import type { ImageCache } from "./image_cache.ts";

/** Extra routes under `/boot/`; `undefined` for a path they do not know (404). */
export interface BootRoutes {
  answer(path: string, req: Request): Promise<Response | undefined>;
}

/** The path of a cached image on the boot server. */
export function imagePath(sha256: string): string {
  return `/images/sha256/${sha256}`;
}

/** The request handler (no listener): testable on its own. */
export function bootHttpHandler(o: { cache: ImageCache; boot?: BootRoutes; log: Logger }) {
  return async (req: Request): Promise<Response> => {
    if (req.method !== "GET" && req.method !== "HEAD") return new Response(null, { status: 405 });
    const path = new URL(req.url).pathname;
    const m = /^\/images\/sha256\/([0-9a-f]{64})$/.exec(path);
    if (m) {
      const opened = await o.cache.open(m[1]!);
      if (!opened) return new Response("not in the cache\n", { status: 404 });
      const headers = { "content-length": String(opened.size), "content-type": "application/octet-stream" };
      if (req.method === "HEAD") {
        opened.file.close();
        return new Response(null, { headers });
      }
      o.log.info({ sha256: m[1], size: opened.size }, "serving a cached image");
      return new Response(opened.file.readable, { headers });
    }
    if (o.boot && path.startsWith("/boot/")) {
      const r = await o.boot.answer(path, req);
      if (r) return r;
    }
    return new Response("not found\n", { status: 404 });
  };
}

/** A listening boot server. */
export interface BootServer {
  /** The base URL machines reach it at (`http://host:port`). */
  readonly url: string;
  shutdown(): Promise<void>;
}

/** Listens on `listen` (`host:port`, port 0 for any) and serves {@link bootHttpHandler}. */
export function serveBoot(
  listen: string,
  handler: (req: Request) => Promise<Response>,
  log: Logger,
): BootServer {
  const { hostname, port } = parseListen(listen);
  const server = Deno.serve({ hostname, port, onListen() {} }, handler);
  const addr = server.addr;
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  const url = `http://${host}:${addr.port}`;
  log.info({ url }, "boot server listening");
  return { url, shutdown: () => server.shutdown() };
}

/** Splits `host:port` (`[v6]:port` for IPv6); a bad value throws a RangeError naming it. */
export function parseListen(listen: string): { hostname: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\[\]]+)):(\d{1,5})$/.exec(listen);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new RangeError(`${JSON.stringify(listen)} is not host:port`);
  return { hostname: (m[1] ?? m[2])!, port };
}
