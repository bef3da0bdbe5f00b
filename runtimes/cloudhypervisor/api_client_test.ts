import assert from "node:assert/strict";
import { ChApiClient, ChApiError, ChTransportError } from "./api_client.ts";
import type { VmConfig } from "./api_types.ts";
import { FakeVmm } from "./fake_vmm.ts";

const CONFIG: VmConfig = {
  payload: { firmware: "/usr/share/cloud-hypervisor/CLOUDHV.fd" },
  cpus: { boot_vcpus: 2, max_vcpus: 2 },
  memory: { size: 512 * 1024 * 1024 },
  disks: [{ path: "/x/disk.qcow2", image_type: "Qcow2", backing_files: true, id: "disk0" }],
  balloon: { size: 0, free_page_reporting: true },
};

async function withVmm(
  f: (api: ChApiClient, vmm: FakeVmm, dir: string) => Promise<void>,
  guest: { honorsPowerButton?: boolean } = {},
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "bcd-ch-api-" });
  const vmm = await FakeVmm.start(`${dir}/api.sock`, guest);
  try {
    await f(new ChApiClient({ socket: `${dir}/api.sock` }), vmm, dir);
  } finally {
    vmm.kill();
    await Deno.remove(dir, { recursive: true });
  }
}

function apiError(status: number, last: string) {
  return (e: unknown) => e instanceof ChApiError && e.status === status && e.messages.at(-1) === last;
}

Deno.test("ChApiClient over the fake VMM: create, boot, pause, resume and shutdown move the VM as cloud-hypervisor's state machine does", async (t) => {
  await withVmm(async (api, vmm) => {
    await t.step("before vm.create: vm.info and vm.boot answer 404 VM is not created", async () => {
      await assert.rejects(api.info(), (e) => e instanceof ChApiError && e.notCreated);
      await assert.rejects(api.boot(), apiError(404, "VM is not created"));
      assert.equal((await api.ping()).version, "v48.0");
    });
    // One row per transition: [call, expected state after, or the error's status and last message].
    const rows: Array<[string, () => Promise<unknown>, string | [number, string]]> = [
      ["vm.create", () => api.create(CONFIG), "Created"],
      ["vm.create again", () => api.create(CONFIG), [500, "VM is already created"]],
      ["vm.pause before boot", () => api.pause(), [500, "VM is not running"]],
      ["vm.resume before boot", () => api.resume(), [500, "VM is not running"]],
      ["vm.shutdown before boot", () => api.shutdown(), [500, "VM is not running"]],
      ["vm.boot", () => api.boot(), "Running"],
      ["vm.boot again", () => api.boot(), [500, "VM is already created"]],
      ["vm.resume while running", () => api.resume(), [
        500,
        "Invalid transition: InvalidStateTransition(Running, Running)",
      ]],
      ["vm.pause", () => api.pause(), "Paused"],
      ["vm.pause while paused", () => api.pause(), [500, "Invalid transition: InvalidStateTransition(Paused, Paused)"]],
      ["vm.resume", () => api.resume(), "Running"],
      ["vm.shutdown", () => api.shutdown(), "Created"],
      ["vm.boot after a shutdown", () => api.boot(), "Running"],
    ];
    for (const [what, call, want] of rows) {
      await t.step(`${what}: ${typeof want === "string" ? want : `HTTP ${want[0]} ${want[1]}`}`, async () => {
        if (typeof want === "string") {
          await call();
          assert.equal((await api.info()).state, want);
        } else {
          const before = (await api.info()).state;
          await assert.rejects(call(), apiError(...want));
          assert.equal((await api.info()).state, before, "a refused call leaves the state");
        }
      });
    }
    await t.step("vm.info carries the configuration back and the vmm lists each call", async () => {
      const info = await api.info();
      assert.deepEqual(info.config.cpus, CONFIG.cpus);
      assert.equal(info.memory_actual_size, 512 * 1024 * 1024);
      assert.ok(vmm.calls.includes("PUT vm.create"));
    });
  });
});

Deno.test("ChApiClient: add-disk is cold before boot and hot after, ids are unique, resize-disk needs a running VM and a known disk", async () => {
  await withVmm(async (api, vmm) => {
    await assert.rejects(api.addDisk({ path: "/v/a.raw" }), apiError(404, "VM is not created"));
    await api.create(CONFIG);
    assert.equal(await api.addDisk({ path: "/v/a.raw", id: "vdb", serial: "vol-a", image_type: "Raw" }), null);
    await assert.rejects(api.addDisk({ path: "/v/b.raw", id: "vdb" }), apiError(409, "Identifier vdb is not unique"));
    await assert.rejects(api.resizeDisk("vdb", 2 ** 30), apiError(500, "Failed resizing a disk image"));
    await api.boot();
    const hot = await api.addDisk({ path: "/v/z.raw", id: "vdz", serial: "bc-rebind", image_type: "Raw" });
    assert.equal(hot?.id, "vdz");
    assert.match(hot?.bdf ?? "", /^0000:00:[0-9a-f]{2}\.0$/);
    await api.resizeDisk("vdb", 2 * 2 ** 30);
    assert.equal(vmm.diskSizes.get("vdb"), 2 * 2 ** 30);
    await assert.rejects(
      api.resizeDisk("nope", 2 ** 30),
      apiError(404, "Failed to find device corresponding to the given identifier: nope"),
    );
    await api.removeDevice("vdz");
    assert.deepEqual((await api.info()).config.disks?.map((d) => d.id), ["disk0", "vdb"]);
    await assert.rejects(api.removeDevice("vdz"), (e) => e instanceof ChApiError && e.status === 404);
  });
});

Deno.test("ChApiClient: vm.resize's desired_balloon moves the balloon; a booted VM without a balloon device refuses it, one not booted only has its configuration changed", async () => {
  await withVmm(async (api) => {
    await api.create(CONFIG);
    await api.boot();
    await api.resize({ desired_balloon: 128 * 1024 * 1024 });
    const info = await api.info();
    assert.equal(info.memory_actual_size, 384 * 1024 * 1024);
    assert.equal(info.config.balloon?.size, 128 * 1024 * 1024);
  });
  await withVmm(async (api) => {
    const { balloon: _b, ...noBalloon } = CONFIG;
    await api.create(noBalloon);
    // Not booted: vmm_resize only edits the configuration, which has no balloon to edit; nothing is refused.
    await api.resize({ desired_balloon: 1 });
    assert.equal((await api.info()).config.balloon, undefined);
    await api.boot();
    await assert.rejects(
      api.resize({ desired_balloon: 1 }),
      apiError(500, "Missing virtio-balloon, can't proceed as expected"),
    );
  });
  await withVmm(async (api) => {
    await api.create(CONFIG);
    await api.resize({ desired_balloon: 64 * 1024 * 1024 });
    const info = await api.info();
    assert.equal(info.config.balloon?.size, 64 * 1024 * 1024, "the size a boot starts the balloon at");
    assert.equal(info.memory_actual_size, 512 * 1024 * 1024, "no VM yet: nothing is taken");
  });
  assert.throws(() => new ChApiClient({ socket: "/nowhere" }).resize({}), TypeError);
});

Deno.test("ChApiClient: a NIC without a file descriptor cannot be added, since the confined VMM opens no tap", async () => {
  await withVmm(async (api) => {
    await api.create(CONFIG);
    await assert.rejects(
      api.addNet({ mac: "52:54:00:00:00:01", id: "net0" }),
      (e) => e instanceof ChApiError && e.status === 500 && /PrivateNetwork=yes/.test(e.messages.at(-1) ?? ""),
    );
    await assert.rejects(
      api.addNet({ mac: "52:54:00:00:00:01", tap: "bc0123" }),
      (e) => e instanceof ChApiError && /tap bc0123/.test(e.messages.at(-1) ?? ""),
    );
  });
});

Deno.test("ChApiClient: vm.snapshot of a paused VM writes config.json, state.json and memory-ranges; vm.restore brings it back paused", async () => {
  await withVmm(async (api, _vmm, dir) => {
    await api.create(CONFIG);
    await api.boot();
    const snap = `${dir}/ch`;
    await Deno.mkdir(snap);
    await assert.rejects(api.snapshot(snap), apiError(500, "Trying to snapshot while VM is running"));
    await api.pause();
    await api.snapshot(snap);
    const files = [...Deno.readDirSync(snap)].map((e) => e.name).sort();
    assert.deepEqual(files, ["config.json", "memory-ranges", "state.json"]);
    assert.deepEqual(JSON.parse(await Deno.readTextFile(`${snap}/config.json`)).cpus, CONFIG.cpus);
    await assert.rejects(api.restore({ source_url: `file://${snap}` }), apiError(500, "VM is already created"));
    await api.vmmShutdown();
    const again = await FakeVmm.start(`${dir}/api.sock`);
    try {
      await api.restore({ source_url: `file://${snap}` });
      assert.equal((await api.info()).state, "Paused");
      await api.resume();
      assert.equal((await api.info()).state, "Running");
    } finally {
      again.kill();
    }
  });
});

Deno.test("ChApiClient: vmm.shutdown and a power button the guest honours end the VMM; one it ignores leaves it running", async () => {
  await withVmm(async (api, vmm) => {
    await api.create(CONFIG);
    await api.boot();
    await api.powerButton();
    await vmm.exited;
    await assert.rejects(api.info(), (e) => e instanceof ChTransportError && e.reason === "vmm-unreachable");
  });
  await withVmm(async (api, vmm) => {
    await api.create(CONFIG);
    await api.boot();
    await api.powerButton();
    assert.equal(vmm.alive, true);
    assert.equal((await api.info()).state, "Running");
    await api.vmmShutdown();
    await vmm.exited;
    assert.equal(vmm.alive, false);
  }, { honorsPowerButton: false });
});

Deno.test("ChApiClient: no socket is vmm-unreachable; a wrong method or path gets cloud-hypervisor's 400 and 404", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-ch-api-" });
  try {
    await assert.rejects(
      new ChApiClient({ socket: `${dir}/api.sock` }).ping(),
      (e) => e instanceof ChTransportError && e.reason === "vmm-unreachable",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  await withVmm((_api, vmm) => {
    assert.deepEqual(vmm.handle({ method: "GET", path: "/api/v1/vm.boot", body: new Uint8Array(), fds: [] }), {
      status: 400,
      body: ["Bad Request"],
    });
    assert.deepEqual(vmm.handle({ method: "GET", path: "/api/v1/vm.nope", body: new Uint8Array(), fds: [] }), {
      status: 404,
      body: ["Not Found"],
    });
    const bad = vmm.handle({ method: "PUT", path: "/api/v1/vm.create", body: new TextEncoder().encode("{"), fds: [] });
    assert.equal(bad.status, 400);
    assert.equal((bad.body as string[])[0], "Failed to deserialize JSON");
    return Promise.resolve();
  });
});

Deno.test("ChApiClient: an answer past the body bound, a head that never ends, or a VMM that never answers fails the call typed", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-ch-rogue-" });
  const path = `${dir}/api.sock`;
  const l = Deno.listen({ transport: "unix", path });
  let reply = new Uint8Array();
  let asked = Promise.withResolvers<void>();
  const served = (async () => {
    for await (const c of l) {
      const buf = new Uint8Array(4096);
      await c.read(buf);
      asked.resolve();
      if (reply.length) {
        await c.write(reply).catch(() => undefined);
        c.close();
      } else {
        // Never answers: the client's deadline must end the call. The connection closes when the client gives up.
        void c.read(buf).then(() => c.close(), () => c.close());
      }
    }
  })();
  try {
    const api = new ChApiClient({ socket: path, maxBody: 1024 });
    await t.step("a 200 whose content-length passes the bound is refused before the body is read", async () => {
      reply = new TextEncoder().encode("HTTP/1.1 200 OK\r\nContent-Length: 999999999\r\n\r\n{}");
      await assert.rejects(api.info(), (e) => e instanceof ChTransportError && e.reason === "bad-response");
    });
    await t.step("a head longer than 16 KiB is refused", async () => {
      reply = new TextEncoder().encode(`HTTP/1.1 200 OK\r\nX: ${"a".repeat(20000)}\r\n\r\n`);
      await assert.rejects(api.info(), (e) => e instanceof ChTransportError && e.reason === "bad-response");
    });
    await t.step("an answer that is not a VmInfo is refused", async () => {
      const body = '{"state":"Sleeping","config":{}}';
      reply = new TextEncoder().encode(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      await assert.rejects(api.info(), (e) => e instanceof ChTransportError && e.reason === "bad-response");
    });
    await t.step("a VMM that never answers ends at the caller's deadline", async () => {
      reply = new Uint8Array();
      asked = Promise.withResolvers<void>();
      const ac = new AbortController();
      const p = api.info(ac.signal);
      await asked.promise;
      ac.abort();
      await assert.rejects(p, (e) => e instanceof ChTransportError && e.reason === "timeout");
    });
  } finally {
    l.close();
    await served.catch(() => undefined);
    await Deno.remove(dir, { recursive: true });
  }
});
