/**
 * Device events across a crash: a real process runs the production devices wiring (`roles/_devices.ts` with the
 * journal's `announced`) and is SIGKILLed between a hold's write and its event; the next process announces what the
 * dead one could not (`AllocationBound` after a write, `AllocationReleased` after a remove), node-signed.
 */
import assert from "node:assert/strict";
import { bcd, decodeMessage, encodeMessage } from "../proto/mod.ts";
import { sampleUuid } from "../core/converge/devices/inventory_testing.ts";
import { Journal } from "../core/journal/mod.ts";
import { generateSigningKeyPair } from "../core/pki/ed25519.ts";
import { openAttestedReport } from "../core/pki/attested_report.ts";

const CRASH_NODE_ID = "node-announce-crash";
const CHILD = new URL("../fixtures/devices/announce_crash_child.ts", import.meta.url).pathname;

async function child(dir: string, mode: string): Promise<Deno.CommandStatus> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", CHILD, dir, mode, CRASH_NODE_ID],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success && out.signal !== "SIGKILL") {
    throw new Error(`child ${mode} failed (${out.code}): ${new TextDecoder().decode(out.stderr)}`);
  }
  return out;
}

async function putSpec(dir: string, generation: number, assignments: unknown[]): Promise<void> {
  const journal = await Journal.open({ dataDir: dir, bootId: "boot-1", nodeId: CRASH_NODE_ID });
  const bytes = encodeMessage(bcd.v1.DesiredStateBody, {
    node_id: CRASH_NODE_ID,
    generation,
    spec_hash: `h${generation}`,
    full: { devices: { assignments } } as bcd.v1.NodeSpec.$Properties,
  });
  await journal.putSpec({ generation, bytes, hash: `h${generation}` });
  await journal.setAppliedGeneration(generation);
  await journal.close();
}

/** The journal's unacked allocation reports, verified with the node's key, and its announced set. */
async function journaled(dir: string, pub: Uint8Array) {
  const journal = await Journal.open({ dataDir: dir, bootId: "boot-1", nodeId: CRASH_NODE_ID });
  try {
    const reports: string[] = [];
    for (const e of await journal.unackedEvents()) {
      const ev = decodeMessage(bcd.v1.Event, e.payload);
      const r = ev.attested_report;
      if (!r) continue;
      const body = await openAttestedReport(pub, CRASH_NODE_ID, { body: r.body!, node_sig: r.node_sig! });
      assert.ok(body, `event #${e.seq} ${ev.type} verifies with the node key`);
      const alloc = body.allocation_bound?.allocation_id ?? body.allocation_released?.allocation_id ??
        body.allocation_failed?.allocation_id;
      reports.push(`${ev.type}:${alloc}:g${body.generation}`);
    }
    return { reports, announced: [...await journal.announcedAllocations()].sort() };
  } finally {
    await journal.close();
  }
}

Deno.test("a SIGKILL between a hold's write and its event loses neither AllocationBound nor AllocationReleased", async (t) => {
  const dir = await Deno.makeTempDir({ dir: "/var/tmp", prefix: "bcd-announce-crash-" });
  try {
    const kp = await generateSigningKeyPair();
    const pkcs8 = new Uint8Array(await crypto.subtle.exportKey("pkcs8", kp.privateKey));
    await Deno.writeFile(`${dir}/node.key`, pkcs8, { mode: 0o600 });
    await Deno.writeFile(`${dir}/node.pub`, kp.publicKey);
    const hold = {
      allocation_id: "a1",
      reservation_id: "r-a1",
      binding: bcd.v1.DeviceAssignment.Binding.BINDING_HOLD,
      devices: [{ class: "gpu", id: sampleUuid(0) }],
    };

    await t.step("killed after the CDI spec is written: the next process journals AllocationBound", async () => {
      await putSpec(dir, 1, [hold]);
      const killed = await child(dir, "kill-after-write");
      assert.equal(killed.signal, "SIGKILL");
      assert.ok((await Deno.stat(`${dir}/cdi/bcd-a1.json`)).isFile, "the hold was written");
      assert.deepEqual(await journaled(dir, kp.publicKey), { reports: [], announced: [] }, "its event was not");
      const ran = await child(dir, "run");
      assert.ok(ran.success);
      assert.deepEqual(await journaled(dir, kp.publicKey), { reports: ["AllocationBound:a1:g1"], announced: ["a1"] });
      await child(dir, "run");
      assert.deepEqual((await journaled(dir, kp.publicKey)).reports, ["AllocationBound:a1:g1"], "announced once");
    });

    await t.step("killed after the CDI spec is removed: the next process journals AllocationReleased", async () => {
      await putSpec(dir, 2, []);
      const killed = await child(dir, "kill-after-remove");
      assert.equal(killed.signal, "SIGKILL");
      await assert.rejects(Deno.stat(`${dir}/cdi/bcd-a1.json`), Deno.errors.NotFound, "the hold was removed");
      assert.deepEqual((await journaled(dir, kp.publicKey)).announced, ["a1"], "its release was not announced");
      assert.ok((await child(dir, "run")).success);
      assert.deepEqual(await journaled(dir, kp.publicKey), {
        reports: ["AllocationBound:a1:g1", "AllocationReleased:a1:g2"],
        announced: [],
      });
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
