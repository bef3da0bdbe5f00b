/** The helper's socket: its modes, the line cap, refusals by name, busy, logging of every op, stale and live sockets. */
import assert from "node:assert/strict";
import { HelperError, MAX_REQUEST_LINE } from "../../core/helper/mod.ts";
import { silentLogger } from "../../core/log/mod.ts";
import { MAX_HOLD_FILES } from "./dispatch.ts";
import { HelperServer } from "./server.ts";
import { startTestHelper, TEST_BOOT_ID } from "./helper_testing.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/**
 * Sends raw bytes on a fresh connection and reads answer lines until `n` arrived or the helper closed it; with
 * `untilClosed`, reads on until the helper closes the connection.
 */
async function raw(
  socket: string,
  bytes: Uint8Array,
  n: number,
  untilClosed = false,
): Promise<{ lines: unknown[]; closed: boolean }> {
  const c = await Deno.connect({ transport: "unix", path: socket });
  const lines: unknown[] = [];
  let closed = false;
  try {
    const w = (async () => {
      let o = 0;
      while (o < bytes.length) o += await c.write(bytes.subarray(o));
    })().catch(() => undefined); // the helper may close before it read everything
    let buf = "";
    const chunk = new Uint8Array(65536);
    while (lines.length < n) {
      const r = await c.read(chunk).catch(() => null);
      if (r === null) {
        closed = true;
        break;
      }
      buf += dec.decode(chunk.subarray(0, r));
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        lines.push(JSON.parse(buf.slice(0, i)));
        buf = buf.slice(i + 1);
      }
    }
    await w;
    if (!closed && untilClosed) closed = (await c.read(chunk).catch(() => null)) === null;
  } finally {
    _close(c);
  }
  return { lines, closed };
}

function _close(c: Deno.Conn): void {
  try {
    c.close();
  } catch (e) {
    if (!(e instanceof Deno.errors.BadResource)) throw e;
  }
}

Deno.test("the helper's socket is 0660 in a 0750 directory, and answers a request", async () => {
  const h = await startTestHelper();
  try {
    assert.equal((await Deno.lstat(h.socket)).isSocket, true);
    assert.equal((await Deno.stat(h.socket)).mode! & 0o777, 0o660);
    assert.equal((await Deno.stat(`${h.root}/run/bcd`)).mode! & 0o777, 0o750);
    const { lines } = await raw(h.socket, enc.encode('{"id":1,"op":"host.boot_id"}\n'), 1);
    assert.deepEqual(lines, [{ id: 1, ok: true, result: { bootId: TEST_BOOT_ID } }]);
  } finally {
    await h.close();
  }
});

Deno.test("a request line past the cap is refused without being buffered, and the connection is closed", async () => {
  const h = await startTestHelper();
  try {
    const big = new Uint8Array(MAX_REQUEST_LINE + 4096).fill(0x20);
    const { lines, closed } = await raw(h.socket, big, 1, true);
    assert.equal(lines.length, 1);
    assert.deepEqual((lines[0] as { error: { code: string } }).error.code, "line-too-long");
    assert.equal((lines[0] as { id: unknown }).id, null);
    assert.ok(closed, "the helper closed the connection");
    // The helper still serves others.
    assert.equal((await h.client.call("host.boot_id", {})).bootId, TEST_BOOT_ID);
  } finally {
    await h.close();
  }
});

Deno.test("refusals come back by name with the request's id, and nothing runs", async () => {
  const h = await startTestHelper();
  try {
    const reqs = [
      '{"id":1,"op":"file.read","args":{"path":"/etc/shadow"}}',
      '{"id":2,"op":"file.write","args":{"kind":"cdi","allocationId":"../x","binding":"hold","devices":[],"env":[]}}',
      '{"id":3,"op":"node.reboot","args":{"reason":"x","force":true}}',
      "not json",
      '{"id":5,"op":"slice.apply","args":{"name":"system.slice","settings":{}}}',
    ];
    const { lines } = await raw(h.socket, enc.encode(reqs.join("\n") + "\n"), reqs.length);
    const byId = (id: number | null) =>
      lines.find((l) => (l as { id: unknown }).id === id) as {
        ok: boolean;
        error: { code: string; message: string };
      };
    assert.equal(byId(1).error.code, "unknown-op");
    assert.match(byId(1).error.message, /file\.read/);
    assert.equal(byId(2).error.code, "invalid-argument");
    assert.match(byId(2).error.message, /allocationId "\.\.\/x"/);
    assert.equal(byId(3).error.code, "unknown-field");
    assert.match(byId(3).error.message, /args\.force/);
    assert.equal(byId(null).error.code, "malformed");
    assert.equal(byId(5).error.code, "invalid-argument");
    assert.deepEqual(h.reboots, [], "the refused reboot did not run");
    await assert.rejects(Deno.stat(h.cdiDir), Deno.errors.NotFound);
    const refusals = h.logs.filter((l) => l.msg === "helper: refused");
    assert.equal(refusals.length, 5, "each refusal is logged");
  } finally {
    await h.close();
  }
});

Deno.test("a helper serving the site or the ramdisk refuses every other op not-allowed, logged, and runs none", async (t) => {
  for (const role of ["site", "ramdisk"] as const) {
    await t.step(role, async () => {
      const h = await startTestHelper({ role });
      try {
        assert.equal(h.server.role, role);
        assert.equal((await h.client.call("host.boot_id", {})).bootId, TEST_BOOT_ID);
        assert.equal((await h.client.call("host.inventory", {})).hostname, "helper-test");
        const refused = [
          h.client.call("holds.list", {}),
          h.client.call("gpu.reset", { gpuUuid: "GPU-6f2a1c3e-3b1e-4f0a-9f3c-0d1e2f3a4b5c" }),
          h.client.call("file.write", { kind: "allocation-env", allocationId: "a1", env: ["BCD_ALLOCATION_ID=a1"] }),
          h.client.call("slice.apply", { name: "bcd-alloc-a1.slice", settings: {} }),
          h.client.call("host.memory", {}),
        ];
        if (role === "ramdisk") refused.push(h.client.call("node.reboot", { reason: "not the ramdisk's" }));
        else await h.client.call("node.reboot", { reason: "the site's" });
        for (const p of refused) {
          await assert.rejects(
            p,
            (e) => e instanceof HelperError && e.code === "not-allowed" && /not an op of/.test(e.message),
          );
        }
        assert.deepEqual(h.reboots, role === "site" ? ["the site's"] : []);
        assert.deepEqual(await h.smiLog(), [], "no reset ran");
        await assert.rejects(Deno.stat(h.envDir), Deno.errors.NotFound, "no env file was written");
        assert.equal(
          h.logs.filter((l) => l.msg === "helper: refused" && l.code === "not-allowed").length,
          refused.length,
        );
        await assert.rejects(
          h.server.run({ id: 1, op: "gpu.reset", args: { gpuUuid: "GPU-6f2a1c3e-3b1e-4f0a-9f3c-0d1e2f3a4b5c" } }),
          (e) => e instanceof HelperError && e.code === "not-allowed",
          "the in-process dispatch refuses it too",
        );
      } finally {
        await h.close();
      }
    });
  }
});

Deno.test("every op is logged with its arguments", async () => {
  const h = await startTestHelper();
  try {
    await h.client.call("node.reboot", { reason: "kernel 6.8.0-45" });
    await h.client.call("slice.usage", { name: "bcd-alloc-a1.slice" });
    const ops = h.logs.filter((l) => l.msg === "helper: op");
    assert.deepEqual(ops.map((l) => [l.op, l.args]), [
      ["node.reboot", { reason: "kernel 6.8.0-45" }],
      ["slice.usage", { name: "bcd-alloc-a1.slice" }],
    ]);
    assert.deepEqual(h.reboots, ["kernel 6.8.0-45"]);
  } finally {
    await h.close();
  }
});

Deno.test("more requests in flight than the cap are answered busy", async () => {
  const h = await startTestHelper({ maxInFlight: 1 });
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const orig = h.backends.rebooter.reboot;
  (h.backends.rebooter as { reboot: (r: string) => Promise<void> }).reboot = async (r) => {
    await gate;
    return orig(r);
  };
  try {
    const first = h.client.call("node.reboot", { reason: "one" });
    await assert.rejects(h.client.call("host.boot_id", {}), (e) => e instanceof HelperError && e.code === "busy");
    release();
    await first;
    assert.equal((await h.client.call("host.boot_id", {})).bootId, TEST_BOOT_ID);
  } finally {
    release();
    await h.close();
  }
});

Deno.test("listen gives the socket and its directory to the node's group", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-helper-gid-" });
  const server = new HelperServer(
    { bootId: () => Promise.resolve("b") } as unknown as ConstructorParameters<typeof HelperServer>[0],
    { log: silentLogger() },
  );
  try {
    // Root may give them any group; a gid other than ours proves the chown happened.
    const gid = Deno.uid() === 0 ? 4242 : Deno.gid()!;
    const l = await server.listen(`${dir}/sock/h.sock`, { gid });
    try {
      assert.equal((await Deno.lstat(`${dir}/sock/h.sock`)).gid, gid);
      assert.equal((await Deno.stat(`${dir}/sock`)).gid, gid);
      assert.equal((await Deno.stat(`${dir}/sock`)).mode! & 0o777, 0o750);
    } finally {
      await l.close();
    }
    await assert.rejects(Deno.lstat(`${dir}/sock/h.sock`), Deno.errors.NotFound, "close removes the socket");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("listen replaces a stale socket but refuses a live one and a path that is not a socket", async () => {
  const h = await startTestHelper();
  const other = new HelperServer(h.backends, { log: silentLogger() });
  try {
    await assert.rejects(other.listen(h.socket), /another helper answers/);
    const file = `${h.root}/plain`;
    await Deno.writeTextFile(file, "x");
    await assert.rejects(other.listen(file), /not a socket/);
    assert.equal(await Deno.readTextFile(file), "x");
    // A socket left by a helper that died: bound, moved away from its listener, the listener gone.
    const stalePath = `${h.root}/stale.sock`;
    const l = Deno.listen({ transport: "unix", path: `${h.root}/bound.sock` });
    await Deno.rename(`${h.root}/bound.sock`, stalePath);
    l.close();
    assert.equal((await Deno.lstat(stalePath)).isSocket, true);
    const s = await other.listen(stalePath);
    try {
      const c = await Deno.connect({ transport: "unix", path: stalePath });
      c.close();
    } finally {
      await s.close();
    }
  } finally {
    await h.close();
  }
});

Deno.test("the client reports an unreachable helper, and reconnects once it is back", async () => {
  const h = await startTestHelper();
  try {
    await h.listener.close();
    await assert.rejects(h.client.call("host.boot_id", {}), (e) => {
      assert.ok(e instanceof HelperError);
      assert.equal(e.code, "unreachable");
      assert.match(e.message, /^helper: host\.boot_id: /);
      return true;
    });
    const again = await h.server.listen(h.socket);
    try {
      assert.equal((await h.client.call("host.boot_id", {})).bootId, TEST_BOOT_ID);
    } finally {
      await again.close();
    }
  } finally {
    await h.close();
  }
});

Deno.test("a helper that does not answer times the call out", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-helper-mute-" });
  const path = `${dir}/mute.sock`;
  const l = Deno.listen({ transport: "unix", path });
  const conns: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const c of l) conns.push(c);
  })().catch(() => undefined);
  const { HelperClient } = await import("./client.ts");
  const c = new HelperClient({ socket: path, defaultTimeoutMs: 50 });
  try {
    await assert.rejects(c.call("holds.list", {}), (e) => e instanceof HelperError && e.code === "timeout");
  } finally {
    c.close();
    l.close();
    for (const x of conns) x.close();
    await accepting;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("forged env lines sent on the socket are refused by the helper itself, and no file is written", async () => {
  const h = await startTestHelper();
  try {
    const forged = [
      ["NVIDIA_VISIBLE_DEVICES=all", "BCD_ALLOCATION_ID=a1"],
      ["BCD_ALLOCATION_ID=a1", "BCD_CGROUP_PARENT=system.slice"],
      ["BCD_ALLOCATION_ID=a1", "BCD_ALLOCATION_ID=a2"],
      ["BCD_ALLOCATION_ID=a1", "LD_PRELOAD=/tmp/x.so"],
      ["BCD_ALLOCATION_ID=a1", "A=$(reboot)"],
      ["BCD_ALLOCATION_ID=a1", "A=x\u2028B=y"],
      ["BCD_ALLOCATION_ID=a1", "A=\u001b[2J"],
    ];
    const lines = forged.map((env, i) =>
      JSON.stringify({ id: i + 1, op: "file.write", args: { kind: "allocation-env", allocationId: "a1", env } })
    );
    const { lines: answers } = await raw(h.socket, enc.encode(lines.join("\n") + "\n"), forged.length);
    for (const a of answers as { ok: boolean; error: { code: string } }[]) {
      assert.equal(a.ok, false);
      assert.equal(a.error.code, "invalid-argument");
    }
    await assert.rejects(Deno.stat(`${h.envDir}/a1.env`), Deno.errors.NotFound, "nothing was written");
  } finally {
    await h.close();
  }
});

Deno.test("slice.apply past the host's limits is refused by the helper, and no slice is made", async () => {
  const h = await startTestHelper();
  try {
    for (
      const settings of [
        { allowedCpus: "0-99999" },
        { memoryMaxBytes: 1 },
        { memoryMaxBytes: 2 ** 30, memoryHighBytes: 2 ** 31 },
        { cpuQuotaPercent: 2 ** 52 },
      ]
    ) {
      await assert.rejects(
        h.client.call("slice.apply", { name: "bcd-alloc-a1.slice", settings }),
        (e) => e instanceof HelperError && e.code === "invalid-argument" && /^helper: slice\.apply: /.test(e.message),
        JSON.stringify(settings),
      );
    }
    assert.deepEqual((await h.client.call("slice.list", {})).names, []);
    await h.client.call("slice.apply", { name: "bcd-alloc-a1.slice", settings: { allowedCpus: "0-3" } });
    assert.deepEqual((await h.client.call("slice.list", {})).names, ["bcd-alloc-a1.slice"]);
  } finally {
    await h.close();
  }
});

Deno.test("the helper keeps at most MAX_HOLD_FILES files of a kind: a new one past it is over-limit, a rewrite is not", async () => {
  const h = await startTestHelper();
  try {
    await Deno.mkdir(h.envDir, { recursive: true });
    for (let i = 0; i < MAX_HOLD_FILES; i++) await Deno.writeTextFile(`${h.envDir}/f${i}.env`, "BCD_ALLOCATION_ID=x\n");
    await assert.rejects(
      h.client.call("file.write", { kind: "allocation-env", allocationId: "new1", env: ["BCD_ALLOCATION_ID=new1"] }),
      (e) => e instanceof HelperError && e.code === "over-limit" && /512 allocation-env files exist/.test(e.message),
    );
    await assert.rejects(Deno.stat(`${h.envDir}/new1.env`), Deno.errors.NotFound);
    await h.client.call("file.write", { kind: "allocation-env", allocationId: "f7", env: ["BCD_ALLOCATION_ID=f7"] });
    assert.equal(await Deno.readTextFile(`${h.envDir}/f7.env`), "BCD_ALLOCATION_ID=f7\n");
  } finally {
    await h.close();
  }
});
