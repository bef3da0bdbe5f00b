/**
 * `bmc.power` (control lane, destructive, 5 min): a Redfish `ComputerSystem.Reset` with the payload's `ResetType`,
 * verified by reading `PowerState` back.
 *
 * - `On`, `ForceOn`-like results: the system must read `On`; `ForceOff` and `GracefulShutdown`: `Off`; the restarts
 *   (`ForceRestart`, `GracefulRestart`, `PowerCycle`): `On` again; `Nmi` is sent and not verified.
 * - A system already in the state `On`, `ForceOff` or `GracefulShutdown` asks for is left alone (the result says so):
 *   many BMCs refuse a reset that changes nothing.
 * - `GracefulShutdown` waits up to `gracefulWaitMs` (default 2 min) for the OS to power off, then sends `ForceOff`
 *   (Ironic's soft power off does the same); the result's message says the fallback was used.
 * - A state that does not read back within `verifyWithinMs` (default 60 s) fails `bmc-power-unverified` with the state
 *   read. A `ResetType` the system's `@Redfish.AllowableValues` does not list fails `bmc-refused` before anything is
 *   sent. Polling runs on the injected clock; a cancel stops between reads.
 *
 * @module
 */
import { realClock } from "../../../core/clock.ts";
import type { HandlerContext, HandlerResult, KindHandler } from "../../../core/commands/handlers.ts";
import { CommandFailed, InvalidPayload } from "../../../core/commands/rejection.ts";
import type { RedfishResource } from "../client.ts";
import { bmcLock, type BmcPorts, checkTarget, openBmc } from "../bmc_target.ts";
import { RedfishError } from "../errors.ts";
import { actionTarget, missing, obj, readUntil, str } from "./_common.ts";
import { payloadOf, resultOf } from "../../../core/commands/kind_payload.ts";

/** The reset types `bmc.power` takes, each with the state it must read back (`undefined`: not verified). */
export const RESET_TYPES: Readonly<Record<string, "On" | "Off" | undefined>> = {
  On: "On",
  ForceOff: "Off",
  GracefulShutdown: "Off",
  GracefulRestart: "On",
  ForceRestart: "On",
  PowerCycle: "On",
  Nmi: undefined,
};

/** Timing of `bmc.power`. */
export interface BmcPowerTiming {
  readonly gracefulWaitMs?: number;
  readonly verifyWithinMs?: number;
  readonly pollMs?: number;
}

/** The `bmc.power` handler. */
export function bmcPowerHandler(ports: BmcPorts & { power?: BmcPowerTiming }): KindHandler {
  const sleep = (ms: number, s?: AbortSignal) => (ports.clock ?? realClock).sleep(ms, s);
  return {
    kind: "bmc.power",
    resources(command) {
      const p = payloadOf("bmc.power", command);
      _action(p.action);
      return [bmcLock(checkTarget(p.target))];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const p = payloadOf("bmc.power", ctx.command);
      const action = _action(p.action);
      const t = checkTarget(p.target);
      const c = await openBmc(ports, t, "bmc.power", ctx.command.id, ctx.signal);
      try {
        const path = await c.systemPath(t.systemId);
        const sys = (await c.get(path)).body;
        const previous = str(sys, "PowerState");
        const want = RESET_TYPES[action];
        const target = actionTarget(sys, "#ComputerSystem.Reset");
        if (!target) throw missing(`${path} lists no #ComputerSystem.Reset action`);
        const allowed = _allowed(sys);
        const poll = { pollMs: ports.power?.pollMs ?? 2000, sleep, signal: ctx.signal };
        const settled = (r: RedfishResource) => str(r, "PowerState") === want;
        const noop = (action === "On" && previous === "On") ||
          ((action === "ForceOff" || action === "GracefulShutdown") && previous === "Off");
        let message = noop ? `the system was already ${previous}; no reset sent` : undefined;
        if (!noop) {
          _checkAllowed(allowed, action, path);
          ctx.logger.info({ bmc: c.origin, system: path, action, previous }, "bmc reset");
          await c.post(target, { ResetType: action });
        }
        if (!noop && action === "GracefulShutdown") {
          const r = await readUntil(c, path, settled, { ...poll, withinMs: ports.power?.gracefulWaitMs ?? 120_000 });
          if (!r.reached && !ctx.signal.aborted) { // after a cancel, no new action: the state read is the outcome
            _checkAllowed(allowed, "ForceOff", path);
            ctx.logger.warn({ bmc: c.origin, system: path }, "GracefulShutdown did not power off; ForceOff");
            await c.post(target, { ResetType: "ForceOff" });
            message = `GracefulShutdown did not power the system off within ${
              (ports.power?.gracefulWaitMs ?? 120_000) / 1000
            } s; ForceOff sent`;
          }
        }
        let state = previous;
        if (want !== undefined) {
          const r = await readUntil(c, path, settled, { ...poll, withinMs: ports.power?.verifyWithinMs ?? 60_000 });
          state = str(r.resource, "PowerState");
          if (!r.reached) {
            throw new CommandFailed(
              "bmc-power-unverified",
              `${action} was sent to ${path} but it reads PowerState ${JSON.stringify(state)}, not ${want}`,
            );
          }
        }
        return {
          result: resultOf("bmc.power", { previous_power_state: previous, power_state: state }),
          ...(message ? { message } : {}),
        };
      } finally {
        await c.close();
      }
    },
  };
}

function _action(a: string): string {
  if (!Object.hasOwn(RESET_TYPES, a)) {
    throw new InvalidPayload(`action ${JSON.stringify(a)} is not one of ${Object.keys(RESET_TYPES).join(", ")}`);
  }
  return a;
}

function _allowed(sys: RedfishResource): string[] | undefined {
  const v = obj(obj(sys, "Actions"), "#ComputerSystem.Reset")?.["ResetType@Redfish.AllowableValues"];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : undefined;
}

function _checkAllowed(allowed: string[] | undefined, action: string, path: string): void {
  if (allowed && !allowed.includes(action)) {
    throw new RedfishError(
      "bmc-refused",
      `${path} does not allow ResetType ${action} (it allows ${allowed.join(", ")})`,
    );
  }
}
