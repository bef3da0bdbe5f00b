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
  CONTROL_SOCKET,
  INITRAMFS_FILE,
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

/** Reattaches; on anything but a live VM returns the command's result instead. The lock stays held. */
async function _reattach(o: AttachOptions, store: SandboxStore): Promise<Attached | HostResult> {
  const out: KeyValue[] = [];
  const record = await store.runtimeRecord();
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
  const conn = await connectControl(store.path(CONTROL_SOCKET), record.vmm, o.timeoutMs);
  const client = await FramingClient.attach(conn, { sync: true, requestTimeoutMs: o.timeoutMs });
  const epoch = record.epoch + 1;
  const next: RuntimeRecord = { ...record, epoch };
  await store.write(RUNTIME_RECORD, JSON.stringify(next));
  await client.ping();
  out.push(
    ["reattached", "live"],
    ["pid", String(record.vmm.pid)],
    ["instance", record.vmm.startTime],
    ["epoch", String(epoch)],
  );
  return { client, record: next, store, out };
}

async function _withAttached(o: AttachOptions, fn: (a: Attached) => Promise<HostResult>): Promise<HostResult> {
  const store = new SandboxStore(o.store);
  await store.lock();
  let client: FramingClient | null = null;
  try {
    const a = await _reattach(o, store);
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
  });
}

/** Once the VM ended: its records go, and its scratch claim with them (the VMM's log stays). */
async function _forget(store: SandboxStore): Promise<void> {
  const rec = await store.read(LAUNCH_RECORD);
  const scratch = rec === null ? null : (JSON.parse(rec) as { plan?: { scratch?: { path?: string } | null } | null })
    .plan?.scratch?.path ?? null;
  for (const f of [RUNTIME_RECORD, LAUNCH_RECORD, INITRAMFS_FILE, CONTROL_SOCKET]) await store.remove(f);
  if (scratch) await releaseScratch(scratch, store.dir);
}
