/**
 * `deploy.image`'s source: the image streamed over https by the libvirt image store's rules (`httpsStream`: https
 * only, redirects only to https, at most 5, the disk's size as the bound, the transfer rules with a clock), hashed
 * with SHA-256 as it passes.
 *
 * @module
 */
import type { ImageStream } from "../../core/disks/deploy.ts";
import { DownloadRefused, httpsStream } from "../host/https_download.ts";
import type { TransferClock } from "../host/https_put.ts";

/** The image at `url` as an {@link ImageStream}. `fetch` carries the trusted CAs (tests: their own). */
export function httpsImageStream(url: string, o: { fetch?: typeof fetch; clock?: TransferClock } = {}): ImageStream {
  return (sink, maxBytes) =>
    httpsStream(url, sink, {
      fetch: o.fetch ?? fetch,
      maxBytes,
      what: "image",
      ...(o.clock ? { clock: o.clock } : {}),
    });
}

/** A stream refusal's reason (`not-https`, `download-failed`, `too-large`, …); `undefined` for anything else. */
export function imageStreamReason(e: unknown): string | undefined {
  return e instanceof DownloadRefused ? e.reason : undefined;
}
