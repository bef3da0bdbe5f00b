/**
 * The self-update's helper port on the agent's side: `daemon.status`, `daemon.install` (a refusal comes back as
 * `ReleaseRefused` with the helper's reason), `daemon.confirm`.
 *
 * @module
 */
import type { DaemonHost, ReleaseState } from "../../core/daemon/ports.ts";
import { ReleaseRefused } from "../../core/daemon/release.ts";
import type { HelperClient } from "./client.ts";

function _b64(b: Uint8Array): string {
  return btoa(String.fromCharCode(...b));
}

/** {@link DaemonHost} over the helper's socket. */
export class HelperDaemonHost implements DaemonHost {
  constructor(private readonly helper: HelperClient) {}

  status(): Promise<ReleaseState> {
    return this.helper.call("daemon.status", {});
  }

  async install(req: { version: string; sha256: string; signature: Uint8Array }): Promise<void> {
    const a = await this.helper.call("daemon.install", {
      version: req.version,
      sha256: req.sha256,
      signature: _b64(req.signature),
    });
    if ("refused" in a) throw new ReleaseRefused(a.refused.reason, `helper: ${a.refused.message}`);
  }

  async confirm(version: string): Promise<void> {
    await this.helper.call("daemon.confirm", { version });
  }
}
