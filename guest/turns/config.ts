/**
 * Resolving how `guest turns` makes turns, from flags, then `SLEEPWALK_*` environment variables, then files in the
 * image (seed 001's adoption modes): `--turn-cmd` for native mode; `--wrap-cmd` / `SLEEPWALK_WRAP_CMD` /
 * `<config dir>/wrap-cmd` for wrap mode, with `SLEEPWALK_WRAP_START` / `SLEEPWALK_WRAP_END` (or `--wrap-start` /
 * `--wrap-end`) overriding the markers and `--wrap-await-secrets` / `SLEEPWALK_WRAP_AWAIT_SECRETS` /
 * `<config dir>/wrap-await-secrets` (its presence) deferring the child until the first Secrets.
 *
 * @module
 */
import type { AgentMode } from "./agent.ts";
import { DEFAULT_END_MARKER, DEFAULT_START_MARKER } from "./engine.ts";
import { splitArgv } from "./processes.ts";

/** The default directory of the wrap-mode files. */
export const DEFAULT_CONFIG_DIR = "/etc/sleepwalk";

/** The flags that bear on the mode. */
export interface ModeFlags {
  readonly turnCmd?: string;
  readonly wrapCmd?: string;
  readonly wrapStart?: string;
  readonly wrapEnd?: string;
  readonly wrapAwaitSecrets?: boolean;
  readonly configDir?: string;
}

/** Where the resolution reads from; the CLI passes the real environment and file system. */
export interface ModeSources {
  /** An environment variable, or `undefined` when unset or not readable. */
  env(name: string): string | undefined;
  /** A file's text, or `null` when it does not exist. */
  readFile(path: string): string | null;
}

/** The mode cannot be resolved (none given, both given, an empty command or marker). */
export class ModeConfigError extends Error {
  override name = "ModeConfigError";
}

/** Resolves the agent's mode; throws {@link ModeConfigError}. */
export function resolveMode(flags: ModeFlags, src: ModeSources): AgentMode {
  const dir = flags.configDir ?? DEFAULT_CONFIG_DIR;
  const wrapCmd = flags.wrapCmd ?? src.env("SLEEPWALK_WRAP_CMD") ?? src.readFile(`${dir}/wrap-cmd`) ?? undefined;
  if (flags.turnCmd !== undefined && wrapCmd !== undefined) {
    throw new ModeConfigError("both a turn command (native mode) and a wrap command (wrap mode) are set; pick one");
  }
  if (flags.turnCmd !== undefined) return { kind: "native", turnArgv: _argv(flags.turnCmd, "--turn-cmd") };
  if (wrapCmd === undefined) {
    throw new ModeConfigError(
      `no mode: pass --turn-cmd (native) or --wrap-cmd, set SLEEPWALK_WRAP_CMD, or write ${dir}/wrap-cmd (wrap)`,
    );
  }
  const startMarker = flags.wrapStart ?? src.env("SLEEPWALK_WRAP_START") ?? DEFAULT_START_MARKER;
  const endMarker = flags.wrapEnd ?? src.env("SLEEPWALK_WRAP_END") ?? DEFAULT_END_MARKER;
  if (startMarker === "" || endMarker === "" || startMarker === endMarker) {
    throw new ModeConfigError(
      `the start and end markers must be non-empty and differ ("${startMarker}", "${endMarker}")`,
    );
  }
  const awaitEnv = src.env("SLEEPWALK_WRAP_AWAIT_SECRETS");
  const awaitSecrets = flags.wrapAwaitSecrets === true ||
    (awaitEnv !== undefined && awaitEnv !== "" && awaitEnv !== "0") ||
    src.readFile(`${dir}/wrap-await-secrets`) !== null;
  return { kind: "wrap", argv: _argv(wrapCmd, "the wrap command"), startMarker, endMarker, awaitSecrets };
}

function _argv(cmd: string, what: string): string[] {
  try {
    return splitArgv(cmd);
  } catch (e) {
    throw new ModeConfigError(`${what} is empty`, { cause: e });
  }
}
