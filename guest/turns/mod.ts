/**
 * The guest side of the turn/drain protocol (seed 001): the I/O-free {@link TurnsEngine}, the agent that serves it
 * on TCP, unix sockets, character devices and a handed-over stdin/stdout, the mode and VM id lookups, and the
 * turn-vs-drain chaos simulation.
 *
 * Readings of the seed that are bcd's own (each also where it is implemented):
 * - vsock is not served: Deno has no AF_VSOCK. A VM's host reaches the agent over TCP on the guest network or over
 *   a virtio-serial port (`--device`, or `--stdio` with the port as stdin/stdout under the guest role's flags).
 * - The VM id comes from `--vm-id`, else `bcd.vm_id=` on the kernel command line, else `/etc/bcd/vm-id`.
 * - Channel authentication (issue 21): with the VM's channel key every connection proves it both ways after
 *   `Hello` (`core/turns/auth.ts`); nothing else from an unproven connection is acted on. `--tcp` needs a key.
 * - Restore detection: only a connection proving a higher restore epoch while the guest is drained is the restored
 *   VM's new host: `AuthOk`, `Resumed{ts}`, clock set from the host's, gate open, queue replayed (`engine.ts`).
 * - vsock: `socket(AF_VSOCK)` through Deno FFI works on this build host (`/dev/vsock` is there), but QEMU here has no
 *   `/dev/vhost-vsock`, so no guest can have a vsock device to test against; {@link TurnsListener} is the seam a
 *   vsock listener plugs into.
 * - Native turn ids must grow: a `RunTurn` whose id is not above the highest seen is a duplicate and is ignored,
 *   so a host may resend, in order, every turn it has not seen start after its channel was lost.
 * - Native mode runs `--turn-cmd` once per turn with the turn id in `SLEEPWALK_TURN_ID` and the secrets in its
 *   environment; a turn whose command fails or cannot start still ends with `TurnEnded`.
 * - Wrap mode: the agent ends with the wrapped command's exit status once it exits (a turn it left open is ended
 *   first); `RunTurn` is refused there (logged), as there is no turn command to run.
 * - Refusals of bad lines are logged and the line dropped; the connection stays (the protocol has no error message).
 *
 * @module
 */
export { type AgentMode, TURN_ID_ENV, TurnsAgent, type TurnsAgentOptions } from "./agent.ts";
export { DEFAULT_CONFIG_DIR, ModeConfigError, type ModeFlags, type ModeSources, resolveMode } from "./config.ts";
export {
  type ConnId,
  DEFAULT_END_MARKER,
  DEFAULT_START_MARKER,
  type EngineAction,
  TurnsEngine,
  type TurnsEngineOptions,
  type WrapSettings,
} from "./engine.ts";
export { splitArgv, type StartedProcess, startProcess } from "./processes.ts";
export {
  deviceConnections,
  listenTcp,
  listenUnix,
  parseHostPort,
  stdioConnections,
  type TurnsConnection,
  type TurnsListener,
} from "./transport.ts";
export { resolveVmId, VM_ID_CMDLINE_KEY, VM_ID_FILE, VmIdError, type VmIdSource } from "./vm_id.ts";
