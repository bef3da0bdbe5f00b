import assert from "node:assert/strict";
import { connectWs } from "./ws_client.ts";
import type { FrameTransport } from "./transport.ts";
import { TransportError } from "./transport.ts";
import { applyWsMask, encodeWsFrame, readWsFrameHeader, wsAcceptFor, WsOpcode } from "./ws_frame.ts";

/** A raw WebSocket server on loopback: each connection is upgraded (or not) and handed to `script`. */
function rawServer(script: (c: RawPeer) => Promise<void>, opts: { badAccept?: boolean } = {}) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const done = (async () => {
    const conn = await listener.accept();
    const head = new Uint8Array(8192);
    let n = 0;
    while (!new TextDecoder().decode(head.subarray(0, n)).includes("\r\n\r\n")) {
      const r = await conn.read(head.subarray(n));
      if (r === null) return;
      n += r;
    }
    const key = /sec-websocket-key:\s*(\S+)/i.exec(new TextDecoder().decode(head.subarray(0, n)))![1]!;
    const accept = opts.badAccept ? "AAAA" : await wsAcceptFor(key);
    await conn.write(
      new TextEncoder().encode(
        `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
      ),
    );
    try {
      await script(new RawPeer(conn));
    } finally {
      closeQuietly(conn);
    }
  })();
  return {
    url: `ws://127.0.0.1:${listener.addr.port}/v1/session`,
    async close() {
      listener.close();
      await done;
    },
  };
}

function closeQuietly(c: Deno.Conn): void {
  try {
    c.close();
  } catch (e) {
    if (!(e instanceof Deno.errors.BadResource)) throw e;
  }
}

class RawPeer {
  #buf = new Uint8Array(0);
  constructor(readonly conn: Deno.Conn) {}
  async write(b: Uint8Array): Promise<void> {
    let off = 0;
    while (off < b.length) off += await this.conn.write(b.subarray(off));
  }
  /** The next client frame, unmasked; undefined at end of stream. */
  async frame(): Promise<{ opcode: number; payload: Uint8Array; masked: boolean } | undefined> {
    for (;;) {
      const h = readWsFrameHeader(this.#buf);
      if (h && this.#buf.length >= h.headerLength + h.payloadLength) {
        const p = this.#buf.slice(h.headerLength, h.headerLength + h.payloadLength);
        this.#buf = this.#buf.slice(h.headerLength + h.payloadLength);
        if (h.mask) applyWsMask(p, h.mask);
        return { opcode: h.opcode, payload: p, masked: h.masked };
      }
      const chunk = new Uint8Array(65536);
      let n: number | null;
      try {
        n = await this.conn.read(chunk);
      } catch (e) {
        if (e instanceof Deno.errors.ConnectionReset || e instanceof Deno.errors.BadResource) return undefined;
        throw e;
      }
      if (n === null) return undefined;
      const next = new Uint8Array(this.#buf.length + n);
      next.set(this.#buf);
      next.set(chunk.subarray(0, n), this.#buf.length);
      this.#buf = next;
    }
  }
  async closeCode(): Promise<number | undefined> {
    for (;;) {
      const f = await this.frame();
      if (!f) return undefined;
      if (f.opcode === WsOpcode.close) return (f.payload[0]! << 8) | f.payload[1]!;
    }
  }
}

async function withClient(
  script: (c: RawPeer) => Promise<void>,
  fn: (t: FrameTransport) => Promise<void>,
  maxMessageBytes = 1024,
) {
  const srv = rawServer(script);
  const t = await connectWs(srv.url, { maxMessageBytes });
  try {
    await fn(t);
  } finally {
    t.close();
    await srv.close();
  }
}

Deno.test("connectWs(): binary messages both ways, client frames masked, fragments reassembled within the bound", async () => {
  let got: { opcode: number; payload: Uint8Array; masked: boolean } | undefined;
  await withClient(async (c) => {
    await c.write(encodeWsFrame(WsOpcode.binary, new Uint8Array([1, 2, 3])));
    await c.write(encodeWsFrame(WsOpcode.binary, new Uint8Array(400).fill(7), { fin: false }));
    await c.write(encodeWsFrame(WsOpcode.ping, new Uint8Array([9]))); // a control frame between fragments
    await c.write(encodeWsFrame(WsOpcode.continuation, new Uint8Array(400).fill(8), { fin: false }));
    await c.write(encodeWsFrame(WsOpcode.continuation, new Uint8Array(224).fill(9)));
    const pong = await c.frame(); // answered while the fragments were read
    assert.equal(pong?.opcode, WsOpcode.pong);
    assert.deepEqual(pong?.payload, new Uint8Array([9]));
    got = await c.frame();
    await c.closeCode();
  }, async (t) => {
    assert.deepEqual(await t.receive(), new Uint8Array([1, 2, 3]));
    const m = await t.receive();
    assert.equal(m?.length, 1024, "exactly the bound is allowed");
    assert.equal(m?.[0], 7);
    assert.equal(m?.[1023], 9);
    assert.ok(t.send(new Uint8Array([4, 5])));
    while (!got) await new Promise((r) => setTimeout(r, 5));
    assert.equal(got.masked, true);
    assert.deepEqual(got.payload, new Uint8Array([4, 5]));
  });
});

Deno.test("connectWs(): a fragmented message is refused 1009 as soon as a fragment's header passes the bound", async () => {
  let code: number | undefined;
  await withClient(async (c) => {
    await c.write(encodeWsFrame(WsOpcode.binary, new Uint8Array(1000), { fin: false }));
    // A header announcing 2^40 bytes and no payload at all: the client must not wait for (or allocate) it.
    await c.write(new Uint8Array([0x00, 127, 0, 0, 1, 0, 0, 0, 0, 0]));
    code = await c.closeCode();
  }, async (t) => {
    assert.equal(await t.receive(), undefined);
    assert.match(t.closedReason ?? "", /^1009 a message of at least 1099511628776 bytes, over the 1024-byte bound/);
    assert.equal(await t.receive(), undefined, "nothing is read after close");
    assert.equal(t.send(new Uint8Array([1])), false);
  });
  assert.equal(code, 1009);
});

Deno.test("connectWs(): text, masked, reserved-bit and stray continuation frames close the session with a reason", async (t) => {
  const rows: { name: string; frame: Uint8Array; code: number; reason: RegExp }[] = [
    { name: "text", frame: encodeWsFrame(WsOpcode.text, new TextEncoder().encode("hi")), code: 1003, reason: /text/ },
    {
      name: "masked",
      frame: encodeWsFrame(WsOpcode.binary, new Uint8Array(3), { mask: true }),
      code: 1002,
      reason: /masked/,
    },
    { name: "reserved bit", frame: new Uint8Array([0xc2, 0x00]), code: 1002, reason: /reserved bit/ },
    {
      name: "stray continuation",
      frame: encodeWsFrame(WsOpcode.continuation, new Uint8Array(1)),
      code: 1002,
      reason: /continuation/,
    },
    { name: "fragmented ping", frame: new Uint8Array([0x09, 0x00]), code: 1002, reason: /fragmented control/ },
  ];
  for (const r of rows) {
    await t.step(r.name, async () => {
      let code: number | undefined;
      await withClient(async (c) => {
        await c.write(r.frame);
        code = await c.closeCode();
      }, async (tr) => {
        assert.equal(await tr.receive(), undefined);
        assert.match(tr.closedReason ?? "", r.reason);
      });
      assert.equal(code, r.code);
    });
  }
});

Deno.test("connectWs(): the server's close frame ends receive() with its code and reason; end of stream too", async () => {
  await withClient(async (c) => {
    await c.write(encodeWsFrame(WsOpcode.close, new Uint8Array([0x03, 0xe8, 0x62, 0x79, 0x65])));
    await c.closeCode();
  }, async (t) => {
    assert.equal(await t.receive(), undefined);
    assert.equal(t.closedReason, "1000 bye");
  });
  await withClient(async (c) => {
    c.conn.close();
    return await Promise.resolve();
  }, async (t) => {
    assert.equal(await t.receive(), undefined);
    assert.match(t.closedReason ?? "", /^1006/);
  });
});

Deno.test("connectWs(): a wrong Sec-WebSocket-Accept, or nothing listening, is a TransportError", async () => {
  const srv = rawServer(() => Promise.resolve(), { badAccept: true });
  await assert.rejects(() => connectWs(srv.url), (e) => e instanceof TransportError && /Accept/.test(e.message));
  await srv.close();
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = l.addr.port;
  l.close();
  await assert.rejects(() => connectWs(`ws://127.0.0.1:${port}/`), TransportError);
});

Deno.test("connectWs(): frames sent in one turn go out in one write, in order, and a close after them follows them", async () => {
  // Count the client's socket writes: Deno.connect is wrapped for this test only.
  const connect = Deno.connect;
  let writes = 0;
  Deno.connect = (async (o: Deno.ConnectOptions) => {
    const c = await connect(o);
    return new Proxy(c, {
      get(target, prop) {
        if (prop === "write") return (b: Uint8Array) => (writes++, target.write(b));
        const v = Reflect.get(target, prop, target);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  }) as typeof Deno.connect;
  const got: number[] = [];
  let code: number | undefined;
  const srv = rawServer(async (c) => {
    for (;;) {
      const f = await c.frame();
      if (!f) return;
      if (f.opcode === WsOpcode.close) {
        code = (f.payload[0]! << 8) | f.payload[1]!;
        return;
      }
      got.push(f.payload[0]!);
    }
  });
  try {
    const t = await connectWs(srv.url);
    const before = writes;
    for (let i = 1; i <= 5; i++) assert.ok(t.send(new Uint8Array([i, 0, 0])));
    t.close(1000, "done");
    await srv.close();
    assert.deepEqual(got, [1, 2, 3, 4, 5]);
    assert.equal(code, 1000);
    assert.equal(writes - before, 1, "five frames and the close frame sent in one turn: one write");
  } finally {
    Deno.connect = connect;
  }
});
