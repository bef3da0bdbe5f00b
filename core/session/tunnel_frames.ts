/**
 * The session's tunnel frames (000 §Break-glass SSH and tunnel keys): `OpenTunnel`, `TunnelData` and `TunnelClose`
 * from the gateway go to the node's {@link Tunnels}; an open runs beside the frame loop (its dial must not hold up
 * other frames), and its failure is logged, never thrown into the session.
 *
 * @module
 */
import type { GatewayFrame } from "../../proto/mod.ts";
import type { TunnelOut, Tunnels } from "../access/tunnels.ts";
import type { Logger } from "../log/mod.ts";

/** The part of {@link Tunnels} the session drives. */
export type TunnelPort = Pick<Tunnels, "open" | "data" | "close" | "closeAll">;

/** Hands a tunnel frame to `tunnels`; false when `f` is not one. */
export function routeTunnelFrame(
  f: GatewayFrame,
  tunnels: TunnelPort | undefined,
  out: TunnelOut,
  log: Logger,
): boolean {
  if (f.open_tunnel) {
    if (!tunnels) {
      out.send({
        tunnel_close: {
          tunnel_id: f.open_tunnel.tunnel_id ?? "",
          reason: "tunnels-unsupported",
          message: "this agent opens no tunnels",
        },
      });
      return true;
    }
    tunnels.open(f.open_tunnel, out).catch((e) => log.error({ err: String(e) }, "tunnel open failed"));
    return true;
  }
  if (f.tunnel_data) {
    tunnels?.data(f.tunnel_data);
    return true;
  }
  if (f.tunnel_close) {
    tunnels?.close(f.tunnel_close);
    return true;
  }
  return false;
}
