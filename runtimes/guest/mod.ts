/**
 * The host's side of the guest: the control framing's client (seed 002 §Host program) and, in `turns_*.ts`, the
 * turn protocol's client (seed 001).
 *
 * {@link FramingClient} attaches over any {@link ByteConn} (a VM's control socket, or `bcd-guest serve`'s pipes
 * through {@link childConn}); with `sync` it attaches in a new epoch after a host restart. Requests end the
 * client on any failure after the framing accepted them; {@link ExecPeer}s carry executions with credit.
 *
 * @module
 */
export {
  BundleTooLarge,
  type ClientOptions,
  FramingClient,
  InstallRefused,
  type Message,
  type ProbeAnswer,
  type RootAnswer,
} from "./framing_client.ts";
export { type ByteConn, childConn } from "./framing_conn.ts";
export { ClientEnded, type ClientEndReason, ReceiveTimeout } from "./framing_errors.ts";
export { ExecAbandoned, ExecPeer, type OutputSink } from "./exec_peer.ts";
