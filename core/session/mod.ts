/**
 * The node's session with the control plane and the agent behind it (000 §Sessions, §How a spec reaches the node).
 *
 * | part | file |
 * | --- | --- |
 * | the agent: session, journal, dispatcher and convergence wired together | `node_agent.ts` ({@link NodeAgent}) |
 * | one session: connect, prove the key on the challenge, `Welcome`, frames, reconnect with backoff | `client.ts`, `backoff.ts` |
 * | the transport: one WebSocket, the node's own bounded RFC 6455 client, which URLs are allowed | `transport.ts`, `ws_client.ts`, `ws_frame.ts`, `url_policy.ts` |
 * | join and the node's identity (key, certificate chain, trust bundle) | `identity.ts`, `proofs.ts` |
 * | taking a spec and a trust bundle; the held spec's provenance offline | `desired_state.ts`, `trust_rotation.ts`, `spec_provenance.ts` |
 * | what travels besides commands: device events, tunnel frames | `device_events.ts`, `tunnel_frames.ts` |
 *
 * Like every folder, it is imported by file (`core/session/identity.ts`); this page says what is where and names
 * what the roles use (README "Code layout").
 *
 * @module
 */
export { NodeAgent, type NodeAgentOptions } from "./node_agent.ts";
export { SessionClient, type SessionClientOptions, SessionProtocolError } from "./client.ts";
export { Backoff, type BackoffOptions } from "./backoff.ts";
export { type FrameTransport, TransportError } from "./transport.ts";
export { connectWebSocket } from "./ws_client.ts";
export { checkTransportUrl, UrlRefused } from "./url_policy.ts";
export { IdentityError, join, loadIdentity, type NodeIdentity } from "./identity.ts";
