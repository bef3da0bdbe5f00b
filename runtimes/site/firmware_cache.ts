/**
 * `bmc.firmware`'s view of the image cache: the image warmed into the cache, offered at the boot server's URL for its
 * digest (SimpleUpdate) or opened re-verified for a push; the cache's refusals said in `bmc.firmware`'s words.
 *
 * @module
 */
import { CommandFailed } from "../../core/commands/rejection.ts";
import type { CachedImage, FirmwareCache } from "../redfish/kinds/bmc_firmware.ts";
import { imagePath } from "./boot_http.ts";
import { DownloadRefused, type ImageCache, ImageDigestMismatch } from "./image_cache.ts";

/** The cache offered to `bmc.firmware`; `bootUrl` is the boot server's base URL as BMCs reach it, if it has one. */
export function firmwareCache(cache: Pick<ImageCache, "warm" | "open">, bootUrl: string | undefined): FirmwareCache {
  return {
    async warm(url: URL, sha256: string): Promise<void> {
      try {
        await cache.warm(url.href, sha256);
      } catch (e) {
        if (e instanceof ImageDigestMismatch) {
          throw new CommandFailed("firmware-digest-mismatch", `${e.message}; the BMC was not asked`, { cause: e });
        }
        if (e instanceof DownloadRefused) {
          throw new CommandFailed("firmware-download-failed", e.message, { cause: e });
        }
        throw e;
      }
    },
    servedAt(sha256: string): URL | undefined {
      return bootUrl === undefined ? undefined : new URL(`${bootUrl}${imagePath(sha256)}`);
    },
    async open(sha256: string): Promise<CachedImage | undefined> {
      const opened = await cache.open(sha256);
      if (!opened) return undefined;
      const { file, size } = opened;
      return {
        size,
        stream: file.readable,
        close() {
          try {
            file.close();
          } catch (e) {
            if (!(e instanceof Deno.errors.BadResource)) throw e; // the stream, read out, closed it already
          }
        },
      };
    },
  };
}
