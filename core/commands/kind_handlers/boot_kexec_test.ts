import assert from "node:assert/strict";
import { packPayload } from "../../../proto/mod.ts";
import { silentLogger } from "../../log/mod.ts";
import { commandBody } from "../command.ts";
import { CommandFailed, InvalidPayload, LeftForRecovery } from "../rejection.ts";
import { bootKexecHandler, type Kexec, type KexecLoadAnswer, type KexecLoadArgs } from "./boot_kexec.ts";
import { Journal } from "../../journal/mod.ts";
import { HandlerRegistry } from "../handlers.ts";
import { NOW, plainDispatcher, until } from "../harness_testing.ts";
import type { CommandUpdate } from "../results.ts";
import { FakeClock } from "../../../fixtures/clock/fake_clock.ts";

const SHA = "cd".repeat(32);

/** A fake root kexec: records loads and the jump, answers what it is told. */
class FakeKexec implements Kexec {
  readonly events: string[] = [];
  readonly loads: KexecLoadArgs[] = [];
  constructor(readonly answer: KexecLoadAnswer, readonly execFails = false) {}
  load(a: KexecLoadArgs): Promise<KexecLoadAnswer> {
    this.loads.push(a);
    this.events.push("load");
    return Promise.resolve(this.answer);
  }
  exec(): Promise<void> {
    this.events.push("exec");
    return this.execFails ? Promise.reject(new Error("helper: failed: no kernel is loaded")) : Promise.resolve();
  }
}

function ctx(payload: Record<string, unknown>, stopping?: AbortSignal) {
  const any = packPayload("boot.kexec", payload);
  return {
    command: commandBody({
      id: "k",
      nodeId: "n",
      kind: "boot.kexec",
      payload: { typeUrl: any.type_url, value: any.value },
    }),
    signal: new AbortController().signal,
    ...(stopping ? { stopping } : {}),
    bootId: "boot-1",
    logger: silentLogger(),
  };
}

const fromDisk = {
  kernel: "/boot/vmlinuz",
  initrd: "/boot/initrd.img",
  cmdline: "root=LABEL=rootfs ro console=ttyS0",
  root_device: "/dev/disk/by-id/virtio-deployed",
};

Deno.test("boot.kexec loads from the deployed disk, then jumps, and waits for its own end without reporting", async (t) => {
  await t.step("the jump ends the process: the daemon stops, the entry stays running", async () => {
    const k = new FakeKexec({ ok: true, kernelSha256: SHA, partition: 2 });
    const stopping = new AbortController();
    const h = bootKexecHandler({
      kexec: k,
      sleep: () => {
        stopping.abort();
        return Promise.resolve();
      },
    });
    await assert.rejects(h.run(ctx(fromDisk, stopping.signal)), LeftForRecovery);
    assert.deepEqual(k.events, ["load", "exec"]);
    assert.deepEqual(k.loads, [{
      source: "disk",
      diskId: "virtio-deployed",
      kernel: "/boot/vmlinuz",
      initrd: "/boot/initrd.img",
      cmdline: fromDisk.cmdline,
    }]);
  });
  await t.step("still running after the grace period: kexec-failed", async () => {
    const k = new FakeKexec({ ok: true, kernelSha256: SHA });
    const h = bootKexecHandler({ kexec: k, sleep: () => Promise.resolve() });
    await assert.rejects(h.run(ctx(fromDisk)), (e) => e instanceof CommandFailed && e.code === "kexec-failed");
  });
});

Deno.test("boot.kexec fails with root's reason and never jumps when the load fails; a refused jump is kexec-failed", async (t) => {
  for (const reason of ["kernel-not-found", "digest-mismatch", "mounted"]) {
    await t.step(reason, async () => {
      const k = new FakeKexec({ ok: false, reason, message: reason });
      await assert.rejects(
        bootKexecHandler({ kexec: k, sleep: () => Promise.resolve() }).run(ctx(fromDisk)),
        (e) => e instanceof CommandFailed && e.code === reason,
      );
      assert.deepEqual(k.events, ["load"], "no jump after a failed load");
    });
  }
  await t.step("the jump refused", async () => {
    const k = new FakeKexec({ ok: true, kernelSha256: SHA }, true);
    await assert.rejects(
      bootKexecHandler({ kexec: k, sleep: () => Promise.resolve() }).run(ctx(fromDisk)),
      (e) => e instanceof CommandFailed && e.code === "kexec-failed" && /no kernel is loaded/.test(e.message),
    );
  });
});

Deno.test("boot.kexec takes https URLs with digests, lowercased", async () => {
  const k = new FakeKexec({ ok: true, kernelSha256: SHA });
  await assert.rejects(
    bootKexecHandler({ kexec: k, sleep: () => Promise.resolve() }).run(ctx({
      kernel: "https://images.example/vmlinuz",
      kernel_sha256: SHA.toUpperCase(),
      initrd: "https://images.example/initrd",
      initrd_sha256: SHA,
      cmdline: "ro",
    })),
    CommandFailed,
  );
  assert.deepEqual(k.loads, [{
    source: "url",
    kernel: "https://images.example/vmlinuz",
    kernelSha256: SHA,
    initrd: "https://images.example/initrd",
    initrdSha256: SHA,
    cmdline: "ro",
  }]);
});

Deno.test("boot.kexec refuses a payload it cannot act on safely before queueing", async (t) => {
  const h = bootKexecHandler({ kexec: new FakeKexec({ ok: true, kernelSha256: SHA }) });
  const rows: [string, Record<string, unknown>][] = [
    ["a kernel URL without its digest", { kernel: "https://i.example/vmlinuz", cmdline: "ro" }],
    ["an initrd over http", {
      kernel: "https://i.example/vmlinuz",
      kernel_sha256: SHA,
      initrd: "http://i.example/initrd",
      initrd_sha256: SHA,
    }],
    ["a URL kernel with a root_device", {
      kernel: "https://i.example/k",
      kernel_sha256: SHA,
      root_device: "/dev/disk/by-id/a",
    }],
    ["a relative kernel path", { ...fromDisk, kernel: "boot/vmlinuz" }],
    ["a kernel path with ..", { ...fromDisk, kernel: "/boot/../../etc/shadow" }],
    ["a kernel name as root_device", { ...fromDisk, root_device: "/dev/sda" }],
    ["no root_device", { ...fromDisk, root_device: "" }],
    ["a newline in the command line", { ...fromDisk, cmdline: "ro\ninit=/bin/sh" }],
    ["a command line past 2047 characters", { ...fromDisk, cmdline: "x".repeat(2048) }],
  ];
  for (const [name, p] of rows) {
    await t.step(name, () => assert.throws(() => h.resources!(ctx(p).command), InvalidPayload));
  }
});

Deno.test("through the dispatcher, boot.kexec's jump comes after running{boot_id} is journaled, and nothing follows it", async () => {
  const dir = await Deno.makeTempDir({ dir: "/var/tmp" });
  const journal = await Journal.open({ dataDir: dir, bootId: "boot-1", clock: new FakeClock(NOW) });
  const updates: CommandUpdate[] = [];
  const stateAt: Record<string, string | undefined> = {};
  const kexec: Kexec = {
    async load() {
      stateAt.load = (await journal.get("01K"))?.state;
      return { ok: true, kernelSha256: SHA };
    },
    async exec() {
      stateAt.exec = (await journal.get("01K"))?.state;
    },
  };
  const never = () => new Promise<void>(() => {}); // the machine is gone: the grace never ends in this process
  const registry = new HandlerRegistry().register(
    bootKexecHandler({
      kexec,
      sleep: (_ms, signal) =>
        signal ? new Promise((r) => signal.addEventListener("abort", () => r(), { once: true })) : never(),
    }),
  );
  const d = plainDispatcher({ journal, registry, updates, nodeId: "n", role: "ramdisk" });
  const p = packPayload("boot.kexec", fromDisk);
  await d.deliver({
    bodyBytes: new Uint8Array([1]),
    attempt: 1,
    body: {
      id: "01K",
      nodeId: "n",
      kind: "boot.kexec",
      payload: { typeUrl: p.type_url, value: p.value },
      notAfterMs: NOW + 60_000,
      seq: 1,
      lane: "control",
      minGeneration: 0,
      retrySafe: false,
      idempotencyKey: "",
      selfTerminating: true,
      attested: false,
      workflowId: "",
      stepId: "",
      traceparent: "",
      batchId: "",
    },
  });
  await until(() => stateAt.exec !== undefined, "the jump");
  assert.deepEqual(stateAt, { load: "running", exec: "running" }, "journaled running before the load and the jump");
  await d.stop();
  assert.deepEqual(updates.map((u) => u.state), ["ACKED", "RUNNING"], "no terminal update: the next boot settles it");
  assert.equal((await journal.get("01K"))?.state, "running");
  await journal.close();
  await Deno.remove(dir, { recursive: true });
});
