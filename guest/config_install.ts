/**
 * Installing the fleet agent-config bundle into this guest (seed 004 §(c), T2): the host streams a version
 * frame, then gzip-tar chunks, then an end frame (kinds 32–34); the guest checks the order, the version and the
 * wire cap, installs through the safety kernel's {@link Tree} at its fixed root with 0755/0644 modes, and answers
 * once with a result code: not provisioned → failed-precondition; frame order, version, unsafe bundle →
 * invalid-argument; wire overrun → resource-exhausted; anything else → internal. Idempotent per version; an empty
 * version with no chunks installs no tree.
 *
 * @module
 */
import { join } from "../core/util/path.ts";
import type { Logger } from "../core/log/mod.ts";
import {
  BodyError,
  decodeVersion,
  encodeFrame,
  encodeInstallResult,
  type InstallResult,
  Kind,
  versionProblem,
} from "../core/framing/mod.ts";
import { MAX_WIRE_BYTES, Tree, UnsafeBundle } from "../core/images/mod.ts";

/** The guest agent's own directory; `BCD_GUEST_ROOT` overrides it (tests). */
export const DEFAULT_GUEST_ROOT = "/run/bcd-guest";
/** The agent config tree below the guest root, as the seed's `/run/compass/agent-config`. */
export const AGENT_CONFIG_DIR = "agent-config";

/** The agent config root: `$BCD_GUEST_ROOT/agent-config`, by default `/run/bcd-guest/agent-config`. */
export function agentConfigRoot(guestRoot: string = DEFAULT_GUEST_ROOT): string {
  return join(guestRoot, AGENT_CONFIG_DIR);
}

/**
 * Makes the flip link with `ln -s`: Deno refuses `Deno.symlink` under the guest role's path-scoped
 * `--allow-write`, and the role may run programs.
 */
export async function lnSymlink(target: string, path: string): Promise<void> {
  const out = await new Deno.Command("ln", { args: ["-s", "--", target, path], stderr: "piped" }).output();
  if (!out.success) throw new Error(`ln -s ${target} ${path}: ${new TextDecoder().decode(out.stderr).trim()}`);
}

/** Options of a {@link ConfigInstaller}. */
export interface ConfigInstallerOptions {
  /** The guest root; the tree lives in its `agent-config`. The guest root is created 0711, owned by the agent. */
  readonly guestRoot: string;
  readonly log: Logger;
  /** The wire cap; `MAX_WIRE_BYTES` (2 × MaxBytes) unless a test lowers it. */
  readonly maxWireBytes?: number;
}

/** The installer; one {@link InstallSession} per session of the control framing. */
export class ConfigInstaller {
  readonly tree: Tree;
  readonly maxWireBytes: number;
  constructor(readonly opts: ConfigInstallerOptions) {
    this.tree = new Tree(agentConfigRoot(opts.guestRoot), { log: opts.log, symlink: lnSymlink });
    this.maxWireBytes = opts.maxWireBytes ?? MAX_WIRE_BYTES;
  }

  /** A session's install state; `provisioned` says whether installs are allowed yet. */
  session(provisioned: () => boolean): InstallSession {
    return new InstallSession(this, provisioned);
  }

  /** Runs one install: never throws, answers with the code. */
  async install(version: string, tarball: Uint8Array): Promise<InstallResult> {
    try {
      await Deno.mkdir(this.opts.guestRoot, { recursive: true, mode: 0o711 });
      await Deno.chmod(this.opts.guestRoot, 0o711);
      await this.tree.install(version, tarball);
      this.opts.log.info({ version, bytes: tarball.length }, "agent config installed");
      return { code: "ok", problem: "" };
    } catch (e) {
      if (e instanceof UnsafeBundle) {
        return { code: e.reason === "wire-too-large" ? "resource-exhausted" : "invalid-argument", problem: e.message };
      }
      if (e instanceof RangeError) return { code: "invalid-argument", problem: e.message };
      this.opts.log.error({ version, err: String(e) }, "agent config install failed");
      return { code: "internal", problem: e instanceof Error ? e.message : String(e) };
    }
  }
}

/** The install state of one session: idle, receiving a bundle, or refusing the rest of one. */
export class InstallSession {
  #state: "idle" | "receiving" | "refused" = "idle";
  #version = "";
  #chunks: Uint8Array[] = [];
  #bytes = 0;
  #refusal: InstallResult | null = null;

  constructor(readonly installer: ConfigInstaller, readonly provisioned: () => boolean) {}

  /** The whole AgentConfigResult message of a result. */
  encode(r: InstallResult): Uint8Array {
    return encodeFrame(Kind.AgentConfigResult, encodeInstallResult(r));
  }

  #refuse(code: InstallResult["code"], problem: string): null {
    this.#state = "refused";
    this.#refusal ??= { code, problem };
    this.#chunks = [];
    return null;
  }

  /** Takes one frame of kind 32–34; returns the result after the end frame, else null. Bodies may be views. */
  frame(kind: number, body: Uint8Array): Promise<InstallResult> | null {
    switch (kind) {
      case Kind.AgentConfigVersion: {
        if (this.#state !== "idle") return this.#refuse("invalid-argument", "a second version frame");
        let v: string;
        try {
          v = decodeVersion(body);
        } catch (e) {
          if (e instanceof BodyError) return this.#refuse("invalid-argument", e.message);
          throw e;
        }
        if (!this.provisioned()) return this.#refuse("failed-precondition", "the guest is not provisioned yet");
        const p = versionProblem(v);
        if (p !== null) return this.#refuse("invalid-argument", p);
        this.#state = "receiving";
        this.#version = v;
        return null;
      }
      case Kind.AgentConfigChunk: {
        if (this.#state === "refused") return null;
        if (this.#state === "idle") return this.#refuse("invalid-argument", "a chunk before the version frame");
        if (this.#version === "") return this.#refuse("invalid-argument", "chunks after an empty version");
        this.#bytes += body.length;
        if (this.#bytes > this.installer.maxWireBytes) {
          return this.#refuse("resource-exhausted", `the bundle exceeds ${this.installer.maxWireBytes} wire bytes`);
        }
        this.#chunks.push(body.slice());
        return null;
      }
      case Kind.AgentConfigEnd: {
        const state = this.#state;
        const refusal = this.#refusal;
        const version = this.#version;
        const chunks = this.#chunks;
        const bytes = this.#bytes;
        this.reset();
        if (state === "idle") {
          return Promise.resolve({ code: "invalid-argument", problem: "an end before the version frame" });
        }
        if (state === "refused") return Promise.resolve(refusal!);
        const tarball = new Uint8Array(bytes);
        let o = 0;
        for (const c of chunks) {
          tarball.set(c, o);
          o += c.length;
        }
        return this.installer.install(version, tarball);
      }
      default:
        throw new RangeError(`kind ${kind} is not a config-install kind`);
    }
  }

  /** Drops an install in progress (a reset of the session). */
  reset(): void {
    this.#state = "idle";
    this.#version = "";
    this.#chunks = [];
    this.#bytes = 0;
    this.#refusal = null;
  }
}
