import assert from "node:assert/strict";
import { FakeClock } from "../../fixtures/clock/fake_clock.ts";
import { REBIND_WAIT_MS, type RebindDisk, runRebind } from "./disk.ts";
import { REBIND_ANSWER_OFFSET, rebindNonce } from "./image.ts";

/** A rebind disk in memory; `guest` runs on attach (an answering guest writes the answer). */
class MemoryDisk implements RebindDisk {
  file: Uint8Array | undefined;
  attached = false;
  readonly calls: string[] = [];
  failAttach: Error | undefined;
  constructor(readonly guest?: (d: MemoryDisk) => void) {}
  write(image: Uint8Array) {
    this.calls.push("write");
    this.file = image.slice();
    return Promise.resolve();
  }
  attach() {
    this.calls.push("attach");
    if (this.failAttach) return Promise.reject(this.failAttach);
    this.attached = true;
    this.guest?.(this);
    return Promise.resolve();
  }
  answer() {
    return Promise.resolve(this.file!.slice(REBIND_ANSWER_OFFSET));
  }
  detach() {
    this.calls.push("detach");
    this.attached = false;
    return Promise.resolve();
  }
  destroy() {
    this.calls.push("destroy");
    this.file!.fill(0);
    this.file = undefined;
    return Promise.resolve();
  }
}

Deno.test("runRebind(): an answering guest is rebound; the disk is detached and its file zeroed and deleted", async () => {
  const nonce = rebindNonce();
  const disk = new MemoryDisk((d) =>
    d.file!.set(new TextEncoder().encode(`BCREBOUND ${nonce}\n`), REBIND_ANSWER_OFFSET)
  );
  assert.equal(await runRebind(disk, new Uint8Array(1024 * 1024), nonce, { clock: new FakeClock() }), true);
  assert.deepEqual(disk.calls, ["write", "attach", "detach", "destroy"]);
  assert.equal(disk.file, undefined);
});

Deno.test("runRebind(): a silent guest is waited for exactly 2 minutes, then the disk goes either way", async () => {
  const clock = new FakeClock();
  const disk = new MemoryDisk();
  let done: boolean | undefined;
  const p = runRebind(disk, new Uint8Array(1024 * 1024), rebindNonce(), { clock }).then((r) => done = r);
  await clock.advance(REBIND_WAIT_MS - 1000);
  assert.equal(done, undefined, "still waiting");
  assert.equal(disk.attached, true);
  await clock.advanceUntil(() => done !== undefined, { stepMs: 1000, limitMs: 2000 });
  await p;
  assert.equal(done, false);
  assert.deepEqual(disk.calls, ["write", "attach", "detach", "destroy"]);
});

Deno.test("runRebind(): a detach the guest has not completed is logged; the answer stands and the file still goes", async () => {
  const nonce = rebindNonce();
  const disk = new MemoryDisk((d) =>
    d.file!.set(new TextEncoder().encode(`BCREBOUND ${nonce}\n`), REBIND_ANSWER_OFFSET)
  );
  disk.detach = () => {
    disk.calls.push("detach");
    return Promise.reject(new Error("the guest has not released vdz yet"));
  };
  assert.equal(await runRebind(disk, new Uint8Array(1024 * 1024), nonce, { clock: new FakeClock() }), true);
  assert.deepEqual(disk.calls, ["write", "attach", "detach", "destroy"]);
  assert.equal(disk.file, undefined);
});

Deno.test("runRebind(): a failed attach is thrown after the file was zeroed and deleted", async () => {
  const disk = new MemoryDisk();
  disk.failAttach = new Error("virsh attach-disk: target vdz already exists");
  await assert.rejects(
    runRebind(disk, new Uint8Array(1024 * 1024), rebindNonce(), { clock: new FakeClock() }),
    /already exists/,
  );
  assert.deepEqual(disk.calls, ["write", "attach", "detach", "destroy"]);
  assert.equal(disk.file, undefined);
});
