/**
 * The agent's half of fetching a release: an https download (redirects only to https) into
 * `<data dir>/releases-staging/<sha256>.tar.gz.part`, hashed with SHA-256 while it streams and bounded in size; a
 * digest that does not match removes the file (`bad-digest`); a match is renamed to `<sha256>.tar.gz`, where the
 * helper reads it. Other staged files are removed first (one release is staged at a time).
 *
 * @module
 */
import { join } from "../../core/util/path.ts";
import type { ReleaseFetcher } from "../../core/daemon/ports.ts";
import { MAX_RELEASE_BYTES, ReleaseRefused, type ReleaseTarget } from "../../core/daemon/release.ts";
import { DownloadRefused, httpsDownload } from "../host/https_download.ts";
import { STAGING_DIR } from "./helper_upgrader.ts";

/** Downloads releases into `dataDir`'s staging directory. */
export class HttpsReleaseFetcher implements ReleaseFetcher {
  constructor(private readonly dataDir: string, private readonly fetchFn: typeof fetch = fetch) {}

  get stagingDir(): string {
    return join(this.dataDir, STAGING_DIR);
  }

  async fetch(t: ReleaseTarget): Promise<void> {
    await Deno.mkdir(this.stagingDir, { recursive: true, mode: 0o700 });
    const final = join(this.stagingDir, `${t.sha256}.tar.gz`);
    for await (const e of Deno.readDir(this.stagingDir)) {
      await Deno.remove(join(this.stagingDir, e.name), { recursive: true });
    }
    const part = `${final}.part`;
    let digest: string;
    try {
      digest = await httpsDownload(t.url, part, { fetch: this.fetchFn, maxBytes: MAX_RELEASE_BYTES, what: "release" });
    } catch (e) {
      await Deno.remove(part).catch((r) => {
        if (!(r instanceof Deno.errors.NotFound)) throw r;
      });
      if (e instanceof DownloadRefused) throw new ReleaseRefused(e.reason, e.message, { cause: e });
      throw e;
    }
    if (digest !== t.sha256) {
      await Deno.remove(part);
      throw new ReleaseRefused("bad-digest", `release ${t.version} from ${t.url} hashes to ${digest}, not ${t.sha256}`);
    }
    await Deno.rename(part, final);
  }
}
