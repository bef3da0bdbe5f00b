/**
 * An {@link HttpsUploader} whose code (TLS connections, redirects, the transfer limits: `https_put.ts`) loads with the
 * first upload rather than at the agent's start (issue 24): `logs.collect` and `instance.snapshot` are wired at start,
 * and most starts upload nothing. A load that fails fails that upload (the command's) and the next one loads again.
 *
 * @module
 */
import { loadOnce } from "../../core/util/load_once.ts";
import type { HttpsUploader } from "./https_put.ts";

/** What an {@link HttpsUploader} is made with. */
export type HttpsUploaderOptions = NonNullable<ConstructorParameters<typeof HttpsUploader>[0]>;

/** `new HttpsUploader(opts)`, made on its first `put` or `putFile`. */
export function lazyHttpsUploader(opts: HttpsUploaderOptions = {}): Pick<HttpsUploader, "put" | "putFile"> {
  const uploader = loadOnce(() => import("./https_put.ts").then(({ HttpsUploader }) => new HttpsUploader(opts)));
  return {
    put: async (url, body, o) => (await uploader()).put(url, body, o),
    putFile: async (url, path, o) => (await uploader()).putFile(url, path, o),
  };
}
