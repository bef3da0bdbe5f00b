/**
 * `stage`, `reattach`, `stop` and `probe` (seed 002 §Commands). Each takes the sandbox's lock. `reattach` finds the
 * VMM of the runtime record, compares the recorded runtime identity with its own (a mismatch signals nothing: the VM
 * runs on, exit 3), holds the VMM through its verified process identity (pid and start time), attaches a new session
 * in the next epoch and exchanges a Ping. `stop` then sends Stop, which the guest confirms once it tore its root down
 * (reporting a failed teardown first), waits for the VMM to end and reads the outcome report; a guest that does not
 * confirm is terminated and the stop fails. `probe` runs each probe in the layered root and prints its facts.
 *
 * @module
 */
import { stageSpec } from "../../core/framing/mod.ts";
import { parseChannelKey } from "../../core/turns/auth.ts";
import { FramingClient } from "../guest/framing_client.ts";
import { type Artifacts, identityDifferences } from "./artifacts.ts";
import {
  EXIT_FAILED,
  EXIT_MISMATCHED,
  EXIT_OK,
  EXIT_ROOT_FAILED,
  type HostResult,
  type KeyValue,
} from "./key_value.ts";
import { isAlive } from "./process_identity.ts";
import { bindDistro, bindScratch, type DistroFormat, encodeStaged, STAGED_FILE } from "./staged.ts";
import {
  CAPABILITY_FILE,
  CONTROL_SOCKET,
  INITRAMFS_FILE,
  LAUNCH_JOURNAL,
  LAUNCH_RECORD,
  releaseScratch,
  RUNTIME_RECORD,
  type RuntimeRecord,
  SandboxStore,
  VMM_LOG,
} from "./store.ts";
import { connectControl, readOutcome, waitExit } from "./vm_session.ts";

/** `stage`: verifies and binds before it takes the lock, then records the bindings in place of earlier ones. */
export async function stage(
  storeDir: string,
  distro: { format: DistroFormat; path: string },
  identity: string,
  scratch: string | null,
): Promise<HostResult> {
  const d = await bindDistro(distro.path, distro.format, identity);
  const s = scratch === null ? null : bindScratch(scratch);
  const store = new SandboxStore(storeDir);
  await store.lock();
  try {
    await store.write(
      STAGED_FILE,
      encodeStaged({
        format: 1,
        distro: { path: distro.path, binding: d },
        scratch: scratch === null ? null : { path: scratch, binding: s! },
      }),
    );
  } finally {
    store.unlock();
  }
  return { code: EXIT_OK, out: [] };
}

/** Options of the commands that reattach. */
export interface AttachOptions {
  readonly store: string;
  readonly artifacts: Artifacts;
  readonly timeoutMs: number;
}

type Attached = { client: FramingClient; record: RuntimeRecord; store: SandboxStore; out: KeyValue[] };

/**
 * Reattaches; on anything but a live VM returns the command's result instead. The lock stays held.
 *
 * A launch that never committed (the step hook ended it at `spawned`, `ready` or `commit`, or it crashed) leaves its
 * journal naming a VMM that runs, and no runtime record. `reattach` and `probe` report it (`reattached=uncommitted`,
 * exit 1: the launch's root configuration and Ping may never have happened, so nothing but Stop is safe to send);
 * `stop` attaches with the capability the launch kept and stops it as it stops a committed VM, which a worker takes
 * before its root configuration too.
 */
async function _reattach(o: AttachOptions, store: SandboxStore, uncommitted: boolean): Promise<Attached | HostResult> {
  const out: KeyValue[] = [];
  let record = await store.runtimeRecord();
  const committed = record !== null;
  if (record === null) {
    const journal = await store.journal();
    if (journal?.vmm && await isAlive(journal.vmm)) {
      out.push(["reattached", "uncommitted"], ["pid", String(journal.vmm.pid)]);
      if (!uncommitted) {
        return {
          code: EXIT_FAILED,
          out,
          problem: `the launch in sandbox ${o.store} never committed: its journal names the VMM (pid ` +
            `${journal.vmm.pid}), which runs; stop ends it`,
        };
      }
      record = { format: 1, vmm: journal.vmm, identity: o.artifacts.identity, mode: "layered", epoch: 1 };
    }
  }
  if (record === null) return { code: EXIT_FAILED, out, problem: `no VM runs in sandbox ${o.store}` };
  const diffs = identityDifferences(record.identity, o.artifacts.identity);
  if (diffs.length > 0) {
    out.push(["reattached", "mismatched"], ["differences", diffs.join(",")], ["pid", String(record.vmm.pid)]);
    return { code: EXIT_MISMATCHED, out };
  }
  let alive: boolean;
  try {
    alive = await isAlive(record.vmm);
  } catch (e) {
    out.push(["reattached", "indeterminate"], ["pid", String(record.vmm.pid)]);
    return { code: EXIT_FAILED, out, problem: `cannot tell whether the VMM runs: ${(e as Error).message}` };
  }
  if (!alive) {
    out.push(["reattached", "exited"], ["pid", String(record.vmm.pid)]);
    const outcome = await readOutcome(store.path(VMM_LOG));
    out.push(["outcome", outcome.text]);
    return { code: EXIT_FAILED, out, problem: `the VM of sandbox ${o.store} has exited` };
  }
  const capText = await store.read(CAPABILITY_FILE);
  if (capText === null) return { code: EXIT_FAILED, out, problem: `sandbox ${o.store} keeps no launch capability` };
  let capability;
  try {
    capability = parseChannelKey(capText);
  } catch (e) {
    return { code: EXIT_FAILED, out, problem: `sandbox ${o.store}'s launch capability: ${(e as Error).message}` };
  }
  const conn = await connectControl(store.path(CONTROL_SOCKET), record.vmm, o.timeoutMs);
  const client = await FramingClient.attach(conn, { channelKey: capability, requestTimeoutMs: o.timeoutMs });
  const epoch = record.epoch + 1;
  const next: RuntimeRecord = { ...record, epoch };
  if (committed) {
    await store.write(RUNTIME_RECORD, JSON.stringify(next));
    await client.ping();
    out.push(["reattached", "live"], ["pid", String(record.vmm.pid)]);
  }
  out.push(["instance", record.vmm.startTime], ["epoch", String(epoch)]);
  return { client, record: next, store, out };
}

async function _withAttached(
  o: AttachOptions,
  fn: (a: Attached) => Promise<HostResult>,
  uncommitted = false,
): Promise<HostResult> {
  const store = new SandboxStore(o.store);
  await store.lock();
  let client: FramingClient | null = null;
  try {
    const a = await _reattach(o, store, uncommitted);
    if (!("client" in a)) return a;
    client = a.client;
    return await fn(a);
  } catch (e) {
    return { code: EXIT_FAILED, out: [], problem: e instanceof Error ? e.message : String(e) };
  } finally {
    client?.close();
    store.unlock();
  }
}

/** `reattach STORE`. */
export function reattach(o: AttachOptions): Promise<HostResult> {
  return _withAttached(o, (a) => Promise.resolve({ code: EXIT_OK, out: a.out }));
}

/** `probe STORE PROBE...`: each PROBE is a name, then its arguments, each after one space. */
export function probe(o: AttachOptions, probes: readonly string[]): Promise<HostResult> {
  return _withAttached(o, async (a) => {
    for (const text of probes) {
      const [name, ...args] = text.split(" ");
      const answer = await a.client.probe({ name: name!, args });
      if ("problem" in answer) return { code: EXIT_FAILED, out: a.out, problem: `probe ${name}: ${answer.problem}` };
      for (const [k, v] of answer.facts) a.out.push([`${name}.${k}`, v]);
    }
    return { code: EXIT_OK, out: a.out };
  });
}

/** `stop STORE`. */
export function stop(o: AttachOptions): Promise<HostResult> {
  return _withAttached(o, async (a) => {
    const { out, record, store } = a;
    let failure;
    try {
      failure = await a.client.stop();
    } catch (e) {
      Deno.kill(record.vmm.pid, "SIGKILL");
      await waitExit(record.vmm, o.timeoutMs);
      out.push(["stopped", "forced"], ["teardown", "incomplete"]);
      await _forget(store);
      return { code: EXIT_FAILED, out, problem: `the guest did not confirm the stop: ${(e as Error).message}` };
    }
    if (failure !== null) out.push(["root", "failed"], ["stage", failure.stage], ["problem", failure.problem]);
    const ended = await waitExit(record.vmm, o.timeoutMs);
    if (!ended) {
      Deno.kill(record.vmm.pid, "SIGKILL");
      await waitExit(record.vmm, o.timeoutMs);
      out.push(["stopped", "timed-out"], ["teardown", "incomplete"]);
      await _forget(store);
      return { code: EXIT_FAILED, out, problem: "the VM did not end after it confirmed the stop" };
    }
    const outcome = await readOutcome(store.path(VMM_LOG));
    out.push(["stopped", "graceful"], ["outcome", outcome.text], ["teardown", "complete"]);
    await _forget(store);
    if (failure !== null) {
      const want = stageSpec(failure.stage).status;
      return outcome.status === want
        ? { code: EXIT_ROOT_FAILED, out }
        : { code: EXIT_FAILED, out, problem: `the VM ended with ${outcome.text}, not guest-exit ${want}` };
    }
    if (outcome.status !== 0) return { code: EXIT_FAILED, out, problem: `the VM ended with ${outcome.text}` };
    return { code: EXIT_OK, out };
  }, true);
}

/** Once the VM ended: its records go, and its scratch claim with them (the VMM's log stays). */
async function _forget(store: SandboxStore): Promise<void> {
  const rec = await store.read(LAUNCH_RECORD);
  const scratch = rec === null ? null : (JSON.parse(rec) as { plan?: { scratch?: { path?: string } | null } | null })
    .plan?.scratch?.path ?? null;
  for (const f of [RUNTIME_RECORD, LAUNCH_JOURNAL, LAUNCH_RECORD, INITRAMFS_FILE, CONTROL_SOCKET, CAPABILITY_FILE]) {
    await store.remove(f);
  }
  if (scratch) await releaseScratch(scratch, store.dir);
}
