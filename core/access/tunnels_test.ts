import assert from "node:assert/strict";
import { jwksOf, newTicketSigner, signTicket } from "../../fixtures/testbed/tickets.ts";
import { openTest, tempDataDir, testClock } from "../journal/journal_testing.ts";
import type { Journal } from "../journal/journal.ts";
import { silentLogger } from "../log/mod.ts";
import { JwksHolder } from "./jwks.ts";
import { type TunnelConn, type TunnelDialer, type TunnelOutFrame, Tunnels } from "./tunnels.ts";

const signer = await newTicketSigner("k1");
const jwks = new JwksHolder();
await jwks.take(jwksOf([signer]));

/** The frames the node sent, with a wait on the next one that matches. */
class Out {
  readonly frames: TunnelOutFrame[] = [];
  #waiters: { pred: (f: TunnelOutFrame) => boolean; resolve: (f: TunnelOutFrame) => void }[] = [];
  send(f: TunnelOutFrame): boolean {
    this.frames.push(f);
    for (const w of [...this.#waiters]) {
      if (w.pred(f)) {
        this.#waiters.splice(this.#waiters.indexOf(w), 1);
        w.resolve(f);
      }
    }
    return true;
  }
  next(pred: (f: TunnelOutFrame) => boolean): Promise<TunnelOutFrame> {
    const seen = this.frames.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => this.#waiters.push({ pred, resolve }));
  }
  closeOf(id: string): Promise<{ reason: string; message: string }> {
    return this.next((f) => "tunnel_close" in f && f.tunnel_close.tunnel_id === id).then((f) =>
      (f as { tunnel_close: { reason: string; message: string } }).tunnel_close
    );
  }
  dataBytes(id: string): number {
    return this.frames.reduce(
      (n, f) => n + ("tunnel_data" in f && f.tunnel_data.tunnel_id === id ? f.tunnel_data.data?.length ?? 0 : 0),
      0,
    );
  }
}

/** An "instance": a loopback TCP server whose connections the test drives. */
function instance() {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  const accepted = (async () => {
    for await (const c of l) conns.push(c);
  })();
  const dials: string[] = [];
  const dialer: TunnelDialer = {
    async dial(inst, port): Promise<TunnelConn> {
      dials.push(`${inst}:${port}`);
      const c = await Deno.connect({ hostname: "127.0.0.1", port: (l.addr as Deno.NetAddr).port });
      return {
        readable: c.readable,
        write: async (b) => {
          let n = 0;
          while (n < b.length) n += await c.write(b.subarray(n));
        },
        close: () => c.close(),
      };
    },
  };
  const peer = async () => {
    while (conns.length === 0) await new Promise((r) => setTimeout(r, 5)); // the accept loop's push is the event
    return conns[0]!;
  };
  return {
    dialer,
    dials,
    peer,
    close: async () => {
      l.close();
      for (const c of conns) {
        try {
          c.close();
        } catch (e) {
          if (!(e instanceof Deno.errors.BadResource)) throw e;
        }
      }
      await accepted.catch(() => undefined);
    },
  };
}

function tunnels(
  journal: Journal,
  dialer: TunnelDialer,
  now: number,
  window?: number,
  onPark?: (id: string, inFlight: number) => void,
) {
  return new Tunnels({
    nodeId: "n1",
    jwks,
    ledger: journal,
    dialer,
    serverNow: () => Promise.resolve(now),
    log: silentLogger(),
    ...(window ? { window } : {}),
    ...(onPark ? { onPark } : {}),
  });
}

const clock = testClock();
const S = Math.floor(clock.now() / 1000);
const claims = { aud: "n1", instance: "i-1", port: 22, exp: S + 300, nbf: S - 1 };

Deno.test("a tunnel with a good ticket dials the instance and relays both ways, acknowledging bytes", async () => {
  await using d = await tempDataDir();
  const j = await openTest(d.dir, clock);
  const inst = await instance();
  const out = new Out();
  const tun = tunnels(j, inst.dialer, clock.now());
  try {
    await tun.open({ tunnel_id: "t1", ticket: await signTicket(signer, claims), instance_id: "i-1", port: 22 }, out);
    tun.data({ tunnel_id: "t1", data: new TextEncoder().encode("SSH-2.0-client\r\n") });
    const peer = await inst.peer();
    const got = new Uint8Array(64);
    const n = await peer.read(got);
    assert.equal(new TextDecoder().decode(got.subarray(0, n!)), "SSH-2.0-client\r\n");
    await out.next((f) => "tunnel_data" in f && f.tunnel_data.ack === 16);
    await peer.write(new TextEncoder().encode("SSH-2.0-instance\r\n"));
    const f = await out.next((f) => "tunnel_data" in f && (f.tunnel_data.data?.length ?? 0) > 0);
    assert.equal(
      new TextDecoder().decode((f as { tunnel_data: { data: Uint8Array } }).tunnel_data.data),
      "SSH-2.0-instance\r\n",
    );
    peer.close();
    assert.equal((await out.closeOf("t1")).reason, "eof");
    assert.equal(tun.size, 0);
    assert.deepEqual(inst.dials, ["i-1:22"]);
  } finally {
    await inst.close();
    await j.close();
  }
});

Deno.test("replayed, expired, wrong-audience and unknown-kid tickets are refused before any dial", async (t) => {
  await using d = await tempDataDir();
  const j = await openTest(d.dir, clock);
  const inst = await instance();
  const out = new Out();
  const tun = tunnels(j, inst.dialer, clock.now());
  const used = await signTicket(signer, { ...claims, jti: "once" });
  try {
    await tun.open({ tunnel_id: "ok", ticket: used, instance_id: "i-1", port: 22 }, out);
    tun.close({ tunnel_id: "ok" });
    const rows: [string, string, string][] = [
      ["replayed", used, "ticket-replayed"],
      ["expired", await signTicket(signer, { ...claims, exp: S - 10 }), "ticket-expired"],
      ["wrong audience", await signTicket(signer, { ...claims, aud: "n2" }), "ticket-wrong-audience"],
      ["unknown kid", await signTicket(signer, claims, { kid: "k9" }), "unknown-kid"],
    ];
    for (const [i, [name, ticket, reason]] of rows.entries()) {
      await t.step(name, async () => {
        await tun.open({ tunnel_id: `r${i}`, ticket, instance_id: "i-1", port: 22 }, out);
        assert.equal((await out.closeOf(`r${i}`)).reason, reason);
      });
    }
    assert.equal(inst.dials.length, 1, "only the first, good ticket dialed");
  } finally {
    await inst.close();
    await j.close();
  }
});

Deno.test("the used-jti set survives a restart, and a full set refuses new tickets", async () => {
  await using d = await tempDataDir();
  const inst = await instance();
  const out = new Out();
  const ticket = await signTicket(signer, { ...claims, jti: "persisted" });
  const j1 = await openTest(d.dir, clock, { maxExecTickets: 2 });
  await tunnels(j1, inst.dialer, clock.now()).open({ tunnel_id: "a", ticket, instance_id: "i-1", port: 22 }, out);
  await j1.close();
  const j2 = await openTest(d.dir, clock, { maxExecTickets: 2 });
  const tun = tunnels(j2, inst.dialer, clock.now());
  try {
    await tun.open({ tunnel_id: "b", ticket, instance_id: "i-1", port: 22 }, out);
    assert.equal((await out.closeOf("b")).reason, "ticket-replayed");
    await tun.open({ tunnel_id: "c", ticket: await signTicket(signer, claims), instance_id: "i-1", port: 22 }, out);
    await tun.open({ tunnel_id: "d", ticket: await signTicket(signer, claims), instance_id: "i-1", port: 22 }, out);
    assert.equal((await out.closeOf("d")).reason, "tickets-full");
  } finally {
    tun.closeAll("test end");
    await inst.close();
    await j2.close();
  }
});

Deno.test("flow control: the node stops reading at a window unacknowledged, and cuts off a gateway past it", async () => {
  await using d = await tempDataDir();
  const j = await openTest(d.dir, clock);
  const inst = await instance();
  const out = new Out();
  const W = 64 * 1024;
  const parks: number[] = [];
  let parked: () => void = () => {};
  const tun = tunnels(j, inst.dialer, clock.now(), W, (_id, n) => {
    parks.push(n);
    parked();
  });
  const nextPark = () => new Promise<void>((r) => (parked = r));
  try {
    await tun.open({ tunnel_id: "f", ticket: await signTicket(signer, claims), instance_id: "i-1", port: 22 }, out);
    const peer = await inst.peer();
    const firstPark = nextPark();
    const writing = (async () => {
      const chunk = new Uint8Array(16 * 1024);
      for (let i = 0; i < 12; i++) await peer.write(chunk); // 3 windows
    })();
    await firstPark;
    // Parked: at least a window sent, less than a window and one read (64 KiB) more, and nothing more until an ack.
    const sent = out.dataBytes("f");
    assert.ok(sent >= W && sent < W + 64 * 1024, `${sent} bytes sent unacknowledged`);
    const secondPark = nextPark();
    tun.data({ tunnel_id: "f", ack: sent });
    await secondPark;
    assert.ok(out.dataBytes("f") - sent < W + 64 * 1024);
    tun.data({ tunnel_id: "f", ack: out.dataBytes("f") - sent });
    await writing;
    await out.next(() => out.dataBytes("f") >= 3 * W);
    tun.data({ tunnel_id: "f", data: new Uint8Array(W + 1) });
    assert.equal((await out.closeOf("f")).reason, "flow-control");
  } finally {
    await inst.close();
    await j.close();
  }
});

Deno.test("a ticket that arrives before the held spec's first pass has ended waits for it, then is judged by its JWKS", async () => {
  await using d = await tempDataDir();
  const j = await openTest(d.dir, clock);
  const inst = await instance();
  const out = new Out();
  // After a restart the JWKS is empty until the pass over the journal's spec takes the spec's.
  const held = new JwksHolder();
  let passEnded!: () => void;
  const firstPass = new Promise<void>((r) => passEnded = r);
  const tun = new Tunnels({
    nodeId: "n1",
    jwks: held,
    ledger: j,
    dialer: inst.dialer,
    serverNow: () => Promise.resolve(clock.now()),
    ready: () => firstPass,
    log: silentLogger(),
  });
  try {
    const opened = tun.open(
      { tunnel_id: "early", ticket: await signTicket(signer, claims), instance_id: "i-1", port: 22 },
      out,
    );
    await held.take(jwksOf([signer]));
    passEnded();
    await opened;
    assert.deepEqual(out.frames.filter((f) => "tunnel_close" in f), [], "not refused unknown-kid");
    assert.deepEqual(inst.dials, ["i-1:22"]);
    tun.close({ tunnel_id: "early" });
  } finally {
    await inst.close();
    await j.close();
  }
});
