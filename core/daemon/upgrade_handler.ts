/**
 * `daemon.upgrade` (bulk lane, retry-safe, self-terminating; node and site): the `daemon` section's step as a command.
 * The dispatcher journals `running` before the handler runs; the helper then swaps the release and restarts the agent,
 * so the first run never reports. The gateway redelivers it (retry-safe) to the new process, which finds the version
 * running and answers `SUCCEEDED` with `DaemonUpgradeResult{previous_version, version}`; after a rollback the old
 * process answers `FAILED rolled-back`. A refusal fails with its reason as the code (`bad-digest`, `BAD_SIGNATURE`, …).
 *
 * @module
 */
import { packResult, unpackPayload, WireDecodeError } from "../../proto/mod.ts";
import type { HandlerContext, HandlerResult, KindHandler } from "../commands/handlers.ts";
import { HOST_LOCK } from "../commands/locks.ts";
import { CommandFailed, InvalidPayload, LeftForRecovery } from "../commands/rejection.ts";
import { ReleaseRefused, type ReleaseTarget } from "./release.ts";
import { type UpgradeDeps, upgradeStep } from "./upgrade.ts";
import { sleepUnlessAborted } from "../clock.ts";

/** How long the handler waits for its own process to be restarted after the helper swapped the release. */
export const RESTART_GRACE_MS = 5 * 60_000;

function _target(p: { typeUrl: string; value: Uint8Array } | undefined): ReleaseTarget {
  if (p === undefined) throw new InvalidPayload("daemon.upgrade carries no payload");
  try {
    const d = unpackPayload("daemon.upgrade", { type_url: p.typeUrl, value: p.value });
    return { version: d.version, url: d.url, sha256: d.sha256, signature: d.signature };
  } catch (e) {
    if (e instanceof WireDecodeError) throw new InvalidPayload(e.message, { cause: e });
    throw e;
  }
}

/**
 * The handler. After the helper swapped the release it waits for its own process to be stopped; when the daemon stops
 * (`stopping`), it leaves the journal entry `running` for the next process ({@link LeftForRecovery}), which answers the
 * redelivered command. `sleep` is injected so tests do not wait the grace period.
 */
export function daemonUpgradeHandler(
  deps: UpgradeDeps & { sleep?: (ms: number, signal?: AbortSignal) => Promise<void> },
): KindHandler {
  const sleep = deps.sleep ?? sleepUnlessAborted;
  return {
    kind: "daemon.upgrade",
    resources(command) {
      _target(command.payload);
      return [HOST_LOCK];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const target = _target(ctx.command.payload);
      let step;
      try {
        step = await upgradeStep(target, deps);
      } catch (e) {
        if (e instanceof ReleaseRefused) throw new CommandFailed(e.reason, e.message, { cause: e });
        throw e;
      }
      if (step.kind === "current") {
        const any = packResult("daemon.upgrade", {
          previous_version: step.previous ?? deps.running,
          version: deps.running,
        });
        return { result: { typeUrl: any.type_url, value: any.value } };
      }
      ctx.logger.warn({ version: target.version, step: step.kind }, "daemon.upgrade: the helper restarts the agent");
      await sleep(RESTART_GRACE_MS, ctx.stopping);
      if (ctx.stopping?.aborted) throw new LeftForRecovery(`release ${target.version}: the daemon stops for it`);
      throw new CommandFailed(
        "upgrade-failed",
        `release ${target.version} was installed but the agent was not restarted`,
      );
    },
  };
}
