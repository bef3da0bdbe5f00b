/**
 * The VMM units' port: `systemd-run` starts a VMM's transient unit, `systemctl stop` stops it and `systemctl show`
 * says what state it is in. {@link SystemdUnits} runs the real tools; `fake_systemd.ts` is the fake (systemd does
 * not run on these machines), which starts a fake VMM for each unit.
 *
 * @module
 */

import { UNIT_STATES, type UnitState } from "../../core/converge/instances/ch_port.ts";

export type { UnitState };

/** A systemd tool that failed. */
export class UnitToolError extends Error {
  override name = "UnitToolError";
}

/** The port. */
export interface ChUnits {
  /** `systemd-run ARGS` (see `unit.ts`); resolves once systemd has started the unit. */
  run(args: readonly string[]): Promise<void>;
  /** `systemctl stop UNIT`. */
  stop(unit: string): Promise<void>;
  /** `systemctl show -p ActiveState --value UNIT`. */
  state(unit: string): Promise<UnitState>;
}

/** The real tools. */
export class SystemdUnits implements ChUnits {
  async run(args: readonly string[]): Promise<void> {
    await _run("systemd-run", [...args]);
  }
  async stop(unit: string): Promise<void> {
    await _run("systemctl", ["stop", "--", unit]);
  }
  async state(unit: string): Promise<UnitState> {
    const out = (await _run("systemctl", ["show", "-p", "ActiveState", "--value", "--", unit])).trim();
    if (!(UNIT_STATES as readonly string[]).includes(out)) {
      throw new UnitToolError(`systemctl show ${unit}: ActiveState ${JSON.stringify(out.slice(0, 64))} is unknown`);
    }
    return out as UnitState;
  }
}

async function _run(cmd: string, args: string[]): Promise<string> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(cmd, { args, stdin: "null", stdout: "piped", stderr: "piped" }).output();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) throw new UnitToolError(`${cmd} is not installed`, { cause: e });
    throw e;
  }
  if (!out.success) {
    const msg = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-3).join("; ");
    throw new UnitToolError(`${cmd} ${args[0]}: ${msg || `exit ${out.code}`}`);
  }
  return new TextDecoder().decode(out.stdout).slice(0, 4096);
}
