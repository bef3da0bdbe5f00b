/**
 * `bmc.firmware`'s view of the image cache: the image warmed into the cache and offered at the boot server's URL for
 * its digest; the cache's refusals said in `bmc.firmware`'s words.
 *
 * @module
 */
import { CommandFailed } from "../../core/commands/rejection.ts";
import type { FirmwareCache } from "../redfish/kinds/bmc_firmware.ts";
import { imagePath } from "./boot_http.ts";
import { DownloadRefused, type ImageCache, ImageDigestMismatch } from "./image_cache.ts";

/** The cache offered to `bmc.firmware`; `bootUrl` is the boot server's base URL as BMCs reach it. */
export function firmwareCache(cache: Pick<ImageCache, "warm">, bootUrl: string): FirmwareCache {
  return {
    async offer(url: URL, sha256: string): Promise<URL> {
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
      return new URL(`${bootUrl}${imagePath(sha256)}`);
    },
  };
}
