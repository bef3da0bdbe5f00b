/**
 * A guest's config installs over its control framing (kinds 32–35) as a {@link GuestConfigPort}: the client's
 * `InstallRefused` becomes {@link GuestInstallRefused} with the guest's code, which the Runner maps by name.
 *
 * @module
 */
import { type GuestConfigPort, GuestInstallRefused } from "../../core/agent_config/mod.ts";
import { type FramingClient, InstallRefused } from "../guest/framing_client.ts";

/** Installs through `client` (attached, and authenticated when the guest holds a channel key). */
export class FramingConfigPort implements GuestConfigPort {
  constructor(readonly client: FramingClient) {}

  async install(version: string, tarball: Uint8Array): Promise<void> {
    try {
      await this.client.installAgentConfig(version, tarball);
    } catch (e) {
      if (e instanceof InstallRefused) throw new GuestInstallRefused(e.result.code, e.result.problem);
      throw e;
    }
  }
}
