/**
 * The node's start order (issue 24): what needs neither the journal nor the agent goes out while the journal opens —
 * the session's first connect and the runtime probes to the helper — and `Hello` still follows the agent's start,
 * carrying what only the open journal and the probes know. Driven through `startAgent` with the node's own wiring, the
 * in-process test helper, a journal whose open waits for the test, and a gateway stand-in that queues a `Challenge`.
 */
import assert from "node:assert/strict";
import { loadAgentConfig } from "../core/config/mod.ts";
import { openNodeSqlite } from "../core/journal/driver_node_sqlite.ts";
import type { SqlDriverFactory } from "../core/journal/mod.ts";
import { silentLogger } from "../core/log/mod.ts";
import { LogRing } from "../core/commands/kind_handlers/log_ring.ts";
import { generateSigningKeyPair } from "../core/pki/ed25519.ts";
import type { FrameTransport } from "../core/session/transport.ts";
import { decodeNodeFrame, encodeGatewayFrame } from "../proto/mod.ts";
import { startTestHelper, TEST_BOOT_ID } from "../runtimes/helper/helper_testing.ts";
import { startAgent } from "./_agent_cli.ts";
import { NODE_WIRING } from "./node.ts";

function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => resolve = r);
  return { promise, resolve };
}

type Hello = NonNullable<ReturnType<typeof decodeNodeFrame>["hello"]>;

/** A gateway stand-in's end of one connection: a queued Challenge, and what the node sent, in `events`. */
function challengeTransport(events: string[]): FrameTransport & { hello: Promise<Hello> } {
  const queue = [encodeGatewayFrame({ challenge: { nonce: new Uint8Array(32), gateway_id: "gw" } })];
  const hello = deferred<Hello>();
  let closed: string | undefined;
  let wake: ((v: Uint8Array | undefined) => void) | undefined;
  return {
    hello: hello.promise,
    send(frame) {
      if (closed !== undefined) return false;
      const f = decodeNodeFrame(frame);
      events.push(`sent ${f.frame}`);
      if (f.hello) hello.resolve(f.hello);
      return true;
    },
    receive() {
      const f = queue.shift();
      if (f) return Promise.resolve(f);
      if (closed !== undefined) return Promise.resolve(undefined);
      return new Promise((r) => wake = r);
    },
    close(code = 1000, reason = "") {
      closed ??= `${code} ${reason}`.trim();
      wake?.(undefined);
    },
    get closedReason() {
      return closed;
    },
  };
}

Deno.test("the node opens its session's connection and probes its runtimes while the journal opens; Hello follows the agent's start", async () => {
  const helper = await startTestHelper({ role: "node" });
  const dataDir = await Deno.makeTempDir({ prefix: "bcd-node-start-order-" });
  const events: string[] = [];
  const call = helper.client.call.bind(helper.client);
  helper.client.call = (op, args) => {
    events.push(`helper ${op}`);
    return call(op, args);
  };
  // The journal's open reaches its storage, then waits until the test lets it go on.
  const reached = deferred();
  const gate = deferred();
  const driver: SqlDriverFactory = async (path, opts) => {
    reached.resolve();
    await gate.promise;
    const db = await openNodeSqlite(path, opts);
    events.push("journal open");
    return db;
  };
  const transport = challengeTransport(events);
  const stop = new AbortController();
  try {
    const starting = startAgent(NODE_WIRING, {
      config: loadAgentConfig(""),
      dataDir,
      bootId: TEST_BOOT_ID,
      hostname: "node-a",
      identity: {
        nodeId: "n-1",
        key: await generateSigningKeyPair(),
        certChain: [],
        trustBundle: new Uint8Array(),
        gatewayUrl: "",
      },
      log: silentLogger(),
      logRing: new LogRing(),
      helper: helper.client,
      connect: () => {
        events.push("connect");
        return Promise.resolve(transport);
      },
      onJournalStop: (e) => events.push(`journal stopped: ${e.message}`),
      driver,
    });
    await reached.promise;
    events.push("journal storage reached");
    gate.resolve();
    const { agent, journal, close } = await starting;
    events.push("agent started");
    const running = agent.run(stop.signal);
    const hello = await transport.hello;
    stop.abort();
    await running;
    await close();

    const at = (e: string) => {
      const i = events.indexOf(e);
      assert.notEqual(i, -1, `${e} happened: ${events.join(", ")}`);
      return i;
    };
    const open = at("journal open");
    for (const e of ["connect", "helper ch.state", "helper libvirt.list"]) {
      assert.ok(at(e) < at("journal storage reached"), `${e} went out while the journal opened: ${events.join(", ")}`);
    }
    assert.ok(open < at("agent started") && at("agent started") < at("sent hello"), events.join(", "));
    assert.equal(events.filter((e) => e === "connect").length, 1, "one connection: the one opened early");
    // What Hello carries came from the open journal and the probes' answers (this helper has neither runtime).
    assert.equal(hello.journal_id, journal.journalId);
    assert.equal(hello.boot_id, TEST_BOOT_ID);
    assert.deepEqual(hello.runtimes ?? [], []);
  } finally {
    stop.abort();
    await helper.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
