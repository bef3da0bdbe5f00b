import assert from "node:assert/strict";
import { preconnect } from "./preconnect.ts";
import { type FrameTransport, TransportError } from "./transport.ts";

/** A transport that only records its close. */
function transport(name: string, closed: string[]): FrameTransport {
  let why: string | undefined;
  return {
    send: () => false,
    receive: () => Promise.resolve(undefined),
    close(code = 1000, reason = "") {
      why = `${code} ${reason}`;
      closed.push(name);
    },
    get closedReason() {
      return why;
    },
  };
}

Deno.test("preconnect() opens the first connection at once; the first connect() takes it, later ones open their own", async () => {
  const closed: string[] = [];
  let opened = 0;
  const pre = preconnect(() => Promise.resolve(transport(`t${++opened}`, closed)));
  assert.equal(opened, 1, "opening began before anyone asked");
  const first = await pre.connect();
  assert.equal(opened, 1, "the first connect took the early one");
  first.close();
  await pre.connect();
  assert.equal(opened, 2, "a reconnect opens a new connection");
  pre.discard();
  await Promise.resolve();
  assert.deepEqual(closed, ["t1"], "discard closes nothing that was taken");
});

Deno.test("preconnect(): an early attempt that failed is thrown to the session that takes it, never as an unhandled rejection", async () => {
  let opened = 0;
  const pre = preconnect(() => {
    opened++;
    return Promise.reject(new TransportError("connection refused"));
  });
  // Let the failure settle before anything takes it: an unhandled rejection would fail this test.
  await new Promise((r) => setTimeout(r, 0));
  await assert.rejects(pre.connect(), TransportError);
  await assert.rejects(pre.connect(), TransportError);
  assert.equal(opened, 2, "the session's retry opened a new connection");
});

Deno.test("preconnect(): discard() closes an early connection nothing took, once it is open, without waiting for it", async () => {
  const closed: string[] = [];
  let open!: (t: FrameTransport) => void;
  const pre = preconnect(() => new Promise<FrameTransport>((r) => open = r));
  pre.discard();
  assert.deepEqual(closed, [], "nothing to close yet: the connection is still opening");
  open(transport("early", closed));
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(closed, ["early"]);
});
