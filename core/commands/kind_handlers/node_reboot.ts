/**
 * `node.reboot` (control lane, retry-safe, self-terminating, destructive): asks the init system to reboot through a
 * {@link Rebooter}. The dispatcher has journaled `running{boot_id}` before the handler runs, so the next boot reports
 * `SUCCEEDED` with `rebooted` and `NodeRebootResult.previous_boot_id` (`journal.recover`); this handler therefore never
 * reports success itself. It waits for the process to end and fails `reboot-failed` when the reboot cannot be asked
 * for, or does not happen within the grace period. It takes the `host` lock: nothing else acts on the machine while
 * it goes down.
 *
 * @module
 */
import { unpackPayload, WireDecodeError } from "../../../proto/mod.ts";
import type { HandlerContext, HandlerResult, KindHandler } from "../handlers.ts";
import { HOST_LOCK } from "../locks.ts";
import { CommandFailed, InvalidPayload } from "../rejection.ts";

/** Asks the machine to reboot; resolves once the request is accepted (the process ends soon after). */
export interface Rebooter {
  reboot(reason: string): Promise<void>;
}

/** How long the handler waits for its own end before it fails the command. */
export const REBOOT_GRACE_MS = 10 * 60_000;

/** The `node.reboot` handler. `sleep` is injected so tests do not wait the grace period. */
export function nodeRebootHandler(ports: {
  rebooter: Rebooter;
  graceMs?: number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}): KindHandler {
  const sleep = ports.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  return {
    kind: "node.reboot",
    resources(command) {
      _reason(command.payload);
      return [HOST_LOCK];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const reason = _reason(ctx.command.payload);
      ctx.logger.warn({ reason }, "rebooting the host");
      try {
        await ports.rebooter.reboot(reason);
      } catch (e) {
        throw new CommandFailed(
          "reboot-failed",
          `the reboot could not be requested: ${e instanceof Error ? e.message : e}`,
          {
            cause: e,
          },
        );
      }
      await sleep(ports.graceMs ?? REBOOT_GRACE_MS);
      throw new CommandFailed("reboot-failed", "the reboot was requested but the daemon is still running");
    },
  };
}

function _reason(p: { typeUrl: string; value: Uint8Array } | undefined): string {
  if (p === undefined) return "";
  try {
    return unpackPayload("node.reboot", { type_url: p.typeUrl, value: p.value }).reason;
  } catch (e) {
    if (e instanceof WireDecodeError) throw new InvalidPayload(e.message, { cause: e });
    throw e;
  }
}
