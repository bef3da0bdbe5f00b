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
import { FakeVirsh } from "../runtimes/libvirt/fake_virsh.ts";
import { LibvirtHost } from "../runtimes/libvirt/libvirt_host.ts";
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

/** One row per host: without a runtime, and with `libvirt-kvm` (whose code loads and whose network rules load early). */
const HOSTS = [
  { name: "a host without a runtime", libvirt: false, early: ["helper ch.state", "helper libvirt.list"] },
  {
    name: "a libvirt-kvm host",
    libvirt: true,
    early: ["helper ch.state", "helper libvirt.list", "helper nft.list", "helper nft.apply"],
  },
];

for (const host of HOSTS) {
  Deno.test(`${host.name}: the node opens its session's connection and probes (and prepares) its runtimes while the journal opens; Hello follows the agent's start`, async () => {
    await startOrder(host);
  });
}

async function startOrder(host: (typeof HOSTS)[number]): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "bcd-node-start-order-" });
  const helper = await startTestHelper({
    role: "node",
    ...(host.libvirt
      ? {
        libvirt: new LibvirtHost({
          virsh: new FakeVirsh(),
          dataDir: `${dataDir}/root-side`,
          domainType: "qemu",
          owner: "node-a",
          bridges: [],
        }),
      }
      : {}),
  });
  const events: string[] = [];
  // The journal's open reaches its storage, then waits until the connect and every early helper op went out (which
  // the old order sent only after the open: a fallback timer, which only bounds that failure, opens it then).
  const early = new Set(["connect", ...host.early]);
  const gate = deferred();
  const fallback = setTimeout(() => gate.resolve(), 30_000);
  const seen = (e: string) => {
    events.push(e);
    if (early.delete(e) && early.size === 0) gate.resolve();
  };
  const call = helper.client.call.bind(helper.client);
  helper.client.call = (op, args) => {
    seen(`helper ${op}`);
    return call(op, args);
  };
  const driver: SqlDriverFactory = async (path, opts) => {
    await gate.promise;
    events.push("journal gate opened");
    const db = await openNodeSqlite(path, opts);
    events.push("journal open");
    return db;
  };
  const transport = challengeTransport(events);
  const stop = new AbortController();
  try {
    const { agent, journal, close } = await startAgent(NODE_WIRING, {
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
        seen("connect");
        return Promise.resolve(transport);
      },
      onJournalStop: (e) => events.push(`journal stopped: ${e.message}`),
      driver,
    });
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
    for (const e of ["connect", ...host.early]) {
      assert.ok(at(e) < at("journal gate opened"), `${e} went out while the journal opened: ${events.join(", ")}`);
    }
    assert.ok(open < at("agent started") && at("agent started") < at("sent hello"), events.join(", "));
    assert.equal(events.filter((e) => e === "connect").length, 1, "one connection: the one opened early");
    // What Hello carries came from the open journal, the probes' answers and the network rules that loaded.
    assert.equal(hello.journal_id, journal.journalId);
    assert.equal(hello.boot_id, TEST_BOOT_ID);
    assert.deepEqual(hello.runtimes ?? [], host.libvirt ? ["libvirt-kvm"] : []);
    assert.equal(hello.capabilities?.includes("instance.network-policy"), host.libvirt);
  } finally {
    clearTimeout(fallback);
    stop.abort();
    await helper.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}
