/**
 * Opening a host-side channel to a guest's turn agent: a unix socket (a virtio-serial or serial port that QEMU
 * backs with a unix socket, or the agent's own `--unix` socket) or TCP on the guest network.
 *
 * @module
 */
import { TurnsClient, type TurnsClientOptions } from "./turns_client.ts";

/** Connects to a unix socket and attaches (waits for `Hello`). */
export async function connectTurnsUnix(path: string, opts: TurnsClientOptions): Promise<TurnsClient> {
  const conn = await Deno.connect({ transport: "unix", path });
  try {
    return await TurnsClient.attach(conn, opts);
  } catch (e) {
    _close(conn);
    throw e;
  }
}

/** Connects over TCP and attaches (waits for `Hello`). */
export async function connectTurnsTcp(hostname: string, port: number, opts: TurnsClientOptions): Promise<TurnsClient> {
  const conn = await Deno.connect({ hostname, port, transport: "tcp" });
  try {
    return await TurnsClient.attach(conn, opts);
  } catch (e) {
    _close(conn);
    throw e;
  }
}

function _close(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch (e) {
    // The guest hung up first (a refused proof): the resource is gone already.
    if (!(e instanceof Deno.errors.BadResource)) throw e;
  }
}
