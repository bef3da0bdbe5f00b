/**
 * The guest side of the turn/drain protocol (seed 001): the I/O-free {@link TurnsEngine}, the agent that serves it
 * on TCP, unix sockets and character devices, and the VM id lookup.
 *
 * @module
 */
export { type AgentMode, TURN_ID_ENV, TurnsAgent, type TurnsAgentOptions } from "./agent.ts";
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
  type TurnsConnection,
  type TurnsListener,
} from "./transport.ts";
