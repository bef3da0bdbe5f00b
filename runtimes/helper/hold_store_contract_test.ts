/**
 * One contract for every HoldStore: the direct `CdiHoldStore` and the node's `HelperHoldStore` over a helper served
 * in-process on temp roots. The same steps, the same files on disk.
 */
import assert from "node:assert/strict";
import { sameHold } from "../../core/converge/devices/hold.ts";
import type { HoldStore } from "../../core/converge/devices/ports.ts";
import { HelperError } from "../../core/helper/mod.ts";
import { CdiHoldStore } from "../cdi/hold_store.ts";
import { HOLD_RECORDS } from "../cdi/records_testing.ts";
import { assertValidCdiSpec } from "../../fixtures/cdi/schema_check.ts";
import { envFileText } from "../cdi/spec.ts";
import { HelperHoldStore } from "./ports.ts";
import { startTestHelper } from "./helper_testing.ts";

interface Subject {
  store: HoldStore;
  cdiDir: string;
  envDir: string;
  close(): Promise<void>;
}

async function direct(): Promise<Subject> {
  const root = await Deno.makeTempDir({ prefix: "bcd-holds-" });
  const cdiDir = `${root}/etc/cdi`;
  const envDir = `${root}/run/bcd/allocations`;
  return {
    store: new CdiHoldStore({ cdiDir, envDir }),
    cdiDir,
    envDir,
    close: () => Deno.remove(root, { recursive: true }),
  };
}

async function viaHelper(): Promise<Subject> {
  const h = await startTestHelper();
  return { store: new HelperHoldStore(h.client), cdiDir: h.cdiDir, envDir: h.envDir, close: () => h.close() };
}

const names = async (dir: string) => {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) out.push(e.name);
  return out.sort();
};

/** A refusal of an id that cannot name a file: a RangeError directly, the helper's invalid-argument through it. */
const refusedId = (e: unknown) =>
  e instanceof RangeError || (e instanceof HelperError && e.code === "invalid-argument");

for (const [label, make] of [["CdiHoldStore", direct], ["HelperHoldStore over the helper", viaHelper]] as const) {
  Deno.test(`HoldStore contract (${label})`, async (t) => {
    const s = await make();
    try {
      await t.step("every shape of hold is written as a valid CDI spec and an env file, and read back", async () => {
        for (const r of Object.values(HOLD_RECORDS)) await s.store.write(r);
        assert.deepEqual(await names(s.cdiDir), ["bcd-a1.json", "bcd-k.json", "bcd-m-2.json"]);
        assert.deepEqual(await names(s.envDir), ["a1.env", "k.env", "m-2.env"]);
        for (const r of Object.values(HOLD_RECORDS)) {
          assertValidCdiSpec(JSON.parse(await Deno.readTextFile(`${s.cdiDir}/bcd-${r.allocationId}.json`)));
          assert.equal(await Deno.readTextFile(`${s.envDir}/${r.allocationId}.env`), envFileText(r.env));
        }
        const l = await s.store.list();
        assert.deepEqual(l.envFiles, ["a1", "k", "m-2"]);
        assert.deepEqual(l.unreadable, []);
        for (const r of Object.values(HOLD_RECORDS)) {
          const o = l.holds.find((h) => h.allocationId === r.allocationId);
          assert.ok(o && sameHold(o, r), `${r.allocationId} reads back as written`);
        }
        assert.equal((await Deno.stat(`${s.cdiDir}/bcd-a1.json`)).mode! & 0o777, 0o644);
        assert.equal((await Deno.stat(`${s.envDir}/a1.env`)).mode! & 0o777, 0o640);
      });
      await t.step("a spec that is not a hold is reported unreadable, and can be removed", async () => {
        await Deno.writeTextFile(`${s.cdiDir}/bcd-broken.json`, "{ truncated");
        const l = await s.store.list();
        assert.deepEqual(l.unreadable.map((u) => u.allocationId), ["broken"]);
        await s.store.remove("broken");
        assert.deepEqual((await s.store.list()).unreadable, []);
      });
      await t.step("remove takes spec and env; removeEnv only the env; absent files are no error", async () => {
        await s.store.remove("a1");
        await s.store.remove("a1");
        await s.store.removeEnv("k");
        await s.store.removeEnv("nothing");
        assert.deepEqual(await names(s.cdiDir), ["bcd-k.json", "bcd-m-2.json"]);
        assert.deepEqual(await names(s.envDir), ["m-2.env"]);
        assert.deepEqual((await s.store.list()).envFiles, ["m-2"]);
      });
      await t.step("an id that cannot name a file is refused and nothing is touched", async () => {
        await assert.rejects(s.store.remove("../../etc/passwd"), refusedId);
        await assert.rejects(s.store.removeEnv("a/b"), refusedId);
        await assert.rejects(s.store.write({ ...HOLD_RECORDS["a whole-GPU hold"]!, allocationId: "../x" }), refusedId);
        assert.deepEqual(await names(s.cdiDir), ["bcd-k.json", "bcd-m-2.json"]);
      });
    } finally {
      await s.close();
    }
  });
}
