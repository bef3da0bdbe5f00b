/**
 * The dispatcher test bench: a real journal and quorum ledger in a temp data dir, a test PKI, fake handlers, a
 * settable server clock and hand-driven timers.
 *
 * @module
 */
import { Journal } from "../journal/mod.ts";
import { signEnvelope } from "../pki/envelope.ts";
import { makeTestPki, type TestPki } from "../pki/pki_testing.ts";
import { QuorumLedger } from "../pki/quorum_ledger.ts";
import { EMPTY_TRUST_BUNDLE, type TrustBundle } from "../pki/trust_bundle.ts";
import { type CommandBody, commandBody, type IncomingCommand } from "./command.ts";
import { type CommandJournal, Dispatcher } from "./dispatcher.ts";
import type { Clock, Timer } from "../clock.ts";
import { FakeHandler } from "./fake_handlers.ts";
import { HandlerRegistry } from "./handlers.ts";
import type { Role } from "./kinds.ts";
import type { CommandUpdate } from "./results.ts";
import type { AcceptanceContext } from "./acceptance.ts";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";

export const NOW = Date.UTC(2026, 10, 30, 7, 0, 0);
export const NODE = "node-1";

/** Timers the test fires by hand. */
export class ManualTimers implements Pick<Clock, "setTimer"> {
  pending: { fn: () => void; ms: number; cleared: boolean }[] = [];
  setTimer(ms: number, fn: () => void): Timer {
    const t = { fn, ms, cleared: false };
    this.pending.push(t);
    return { cancel: () => void (t.cleared = true) };
  }
  fireAll(): void {
    const ts = this.pending.splice(0);
    for (const t of ts) if (!t.cleared) t.fn();
  }
}

export interface Bench extends AsyncDisposable {
  dir: string;
  journal: Journal;
  dispatcher: Dispatcher;
  updates: CommandUpdate[];
  specRequests: string[];
  pki: TestPki;
  ledger: QuorumLedger;
  handlers: Record<string, FakeHandler>;
  timers: ManualTimers;
  state: {
    serverNow: number;
    applied: number;
    upgradeOnly: boolean;
    bundle: TrustBundle;
    unbatchedPerHour: number;
  };
  /** A signed command of `kind` with the body fields given. */
  command(fields: Partial<CommandBody> & { kind: string }, opts?: { sign?: boolean }): Promise<IncomingCommand>;
  /** The updates sent for `id`, as `STATE` or `STATE:reason/code`. */
  trail(id: string): string[];
}

/** Waits (a bounded number of macrotask turns) until `cond` holds; fails naming `what` otherwise. */
export async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 1));
  }
  throw new Error(`timed out waiting for ${what}`);
}

let counter = 0;

/** Opens a bench; `signing` puts the test PKI's roots and approvers in the trust bundle. */
export async function openBench(
  opts: {
    signing?: boolean;
    approvers?: number;
    role?: Role;
    gated?: boolean;
    wrapJournal?: (j: Journal) => CommandJournal;
    /** The signature check's Ed25519 verifier (default: the process's Ed25519 thread). */
    verifyEd25519?: AcceptanceContext["verifyEd25519"];
  } = {},
): Promise<Bench> {
  const dir = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "bcd-commands-test-" });
  const journal = await Journal.open({ dataDir: dir, bootId: "boot-1", clock: new FakeClock(NOW), nodeId: NODE });
  const pki = await makeTestPki({ approvers: opts.approvers ?? 2 });
  const ledger = await QuorumLedger.open(dir, () => NOW);
  const gated = opts.gated ?? false;
  const handlers: Record<string, FakeHandler> = {
    "inventory.refresh": new FakeHandler("inventory.refresh", { gated }),
    "gpu.reset": new FakeHandler("gpu.reset", {
      gated,
      resources: (b) => [`gpu:${new TextDecoder().decode(b.payload?.value ?? new Uint8Array())}`],
    }),
    "diag.dcgm": new FakeHandler("diag.dcgm", {
      gated,
      resources: (b) => [`gpu:${new TextDecoder().decode(b.payload?.value ?? new Uint8Array())}`],
    }),
    "node.reboot": new FakeHandler("node.reboot", { gated }),
    "logs.collect": new FakeHandler("logs.collect", { gated }),
  };
  const registry = new HandlerRegistry();
  for (const h of Object.values(handlers)) registry.register(h);
  const state = {
    serverNow: NOW,
    applied: 5,
    upgradeOnly: false,
    bundle: opts.signing === false ? EMPTY_TRUST_BUNDLE : pki.bundle,
    unbatchedPerHour: 0,
  };
  const updates: CommandUpdate[] = [];
  const specRequests: string[] = [];
  const timers = new ManualTimers();
  const dispatcher = new Dispatcher({
    journal: opts.wrapJournal ? opts.wrapJournal(journal) : journal,
    bootId: "boot-1",
    sink: { send: (u) => void updates.push(u) },
    specs: { requestSpec: (have, reason, detail) => void specRequests.push(`${reason} have=${have} ${detail}`) },
    clock: timers,
    acceptance: {
      nodeId: NODE,
      role: opts.role ?? "node",
      handlers: registry,
      upgradeOnly: () => state.upgradeOnly,
      appliedGeneration: () => state.applied,
      serverNow: () => state.serverNow,
      trustBundle: () => state.bundle,
      ledger,
      unbatchedPerHour: () => state.unbatchedPerHour,
      ...(opts.verifyEd25519 === undefined ? {} : { verifyEd25519: opts.verifyEd25519 }),
    },
  });
  return {
    dir,
    journal,
    dispatcher,
    updates,
    specRequests,
    pki,
    ledger,
    handlers,
    timers,
    state,
    async command(fields, o = {}) {
      const body = commandBody({
        id: `01CMD${String(++counter).padStart(21, "0")}`,
        nodeId: NODE,
        notAfterMs: NOW + 60_000,
        ...fields,
      });
      const bodyBytes = new TextEncoder().encode(JSON.stringify(body));
      const signature = o.sign === false ? undefined : await signEnvelope(pki.worker, "command", bodyBytes);
      return { bodyBytes, body, attempt: 1, ...(signature ? { signature } : {}) };
    },
    trail(id) {
      return updates.filter((u) => u.commandId === id).map((u) =>
        u.reason ? `${u.state}:${u.reason}` : u.errorCode ? `${u.state}:${u.errorCode}` : u.state
      );
    },
    async [Symbol.asyncDispose]() {
      for (const h of Object.values(handlers)) h.releaseAll();
      await dispatcher.stop();
      await journal.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/**
 * A dispatcher over `journal` and `registry` with fixed acceptance inputs (the server clock at {@link NOW}, nothing
 * upgrade-only, no unbatched commands this hour), its updates pushed to `updates` and spec requests dropped: for
 * tests that build their own handlers rather than a whole {@link openBench}.
 */
export function plainDispatcher(o: {
  journal: CommandJournal;
  registry: HandlerRegistry;
  updates: CommandUpdate[];
  /** Default the empty bundle (unsigned commands pass). */
  bundle?: TrustBundle;
  /** The applied spec generation; default 0. */
  applied?: number;
  nodeId?: string;
  role?: Role;
  bootId?: string;
  nodeKey?: CryptoKey;
}): Dispatcher {
  const bundle = o.bundle ?? EMPTY_TRUST_BUNDLE;
  return new Dispatcher({
    journal: o.journal,
    bootId: o.bootId ?? "boot-1",
    ...(o.nodeKey ? { nodeKey: o.nodeKey } : {}),
    sink: { send: (u) => void o.updates.push(u) },
    specs: { requestSpec: () => {} },
    acceptance: {
      nodeId: o.nodeId ?? NODE,
      role: o.role ?? "node",
      handlers: o.registry,
      upgradeOnly: () => false,
      appliedGeneration: () => o.applied ?? 0,
      serverNow: () => NOW,
      trustBundle: () => bundle,
      unbatchedPerHour: () => 0,
    },
  });
}
