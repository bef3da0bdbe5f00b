/**
 * The `sim` role's entry point: the node role on simulated hardware (`sim_wiring.ts`), one node per process, or many
 * with `--nodes N` (`sim_fleet.ts`). Wiring only.
 *
 * @module
 */
import { runCli, type Subcommand } from "./_cli.ts";
import { agentCommands } from "./_agent_cli.ts";
import { fleetJoinCommand, fleetRunCommand } from "./sim_fleet_cli.ts";
import { SIM_DATA_DIR, simWiring } from "./sim_wiring.ts";

const _wiring = simWiring();
const _agent = agentCommands(_wiring);

/** The `sim` role's subcommands beyond `version` and `help`; `join` and `run` take `--nodes N` (a fleet). */
export const COMMANDS: Record<string, Subcommand> = {
  ..._agent,
  join: fleetJoinCommand(_agent.join!, SIM_DATA_DIR),
  run: fleetRunCommand(_agent.run!, SIM_DATA_DIR),
};

if (import.meta.main) {
  Deno.exit(await runCli("sim", Deno.args, COMMANDS));
}
