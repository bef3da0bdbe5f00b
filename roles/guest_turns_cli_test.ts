// `bcd-guest turns` as the role runs it: the guest's own permission flags, a real TCP listener, a wrapped command.
import assert from "node:assert/strict";
import { silentLogger } from "../core/log/mod.ts";
import { formatChannelKey, newChannelKey } from "../core/turns/mod.ts";
import { connectTurnsTcp } from "../runtimes/guest/turns_connect.ts";
import { TurnsClient } from "../runtimes/guest/turns_client.ts";
import { roleFlags } from "./permissions.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const VM = "7e57a1b2-0000-4000-8000-0123456789ab";

function _freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

function _guest(args: string[]) {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", ...roleFlags("guest"), `${ROOT}roles/guest.ts`, "turns", ...args],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
    env: { BCD_LOG_LEVEL: "warn" },
  });
}

Deno.test("guest turns serves TCP under the guest role's flags and exits with the wrapped command's status", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bcd-turns-cli-" });
  await Deno.writeTextFile(
    `${dir}/w.sh`,
    `echo noise\necho BEGIN\necho "\${API_KEY}" > "$1/api-key"\necho END\nexit 0\n`,
  );
  const port = _freePort();
  const channelKey = newChannelKey();
  await Deno.writeTextFile(`${dir}/key`, formatChannelKey(channelKey) + "\n", { mode: 0o600 });
  const child = _guest([
    "--channel-key-file",
    `${dir}/key`,
    "--tcp",
    `127.0.0.1:${port}`,
    "--vm-id",
    VM,
    "--wrap-cmd",
    `sh ${dir}/w.sh ${dir}`,
    "--wrap-start",
    "BEGIN",
    "--wrap-end",
    "END",
    "--wrap-await-secrets",
  ]).spawn();
  let exited = false;
  void child.status.then(() => (exited = true));
  try {
    let client;
    for (let i = 0; i < 500 && client === undefined; i++) {
      try {
        client = await connectTurnsTcp("127.0.0.1", port, { logger: silentLogger(), channelKey });
      } catch (e) {
        if (!(e instanceof Deno.errors.ConnectionRefused)) throw e;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    assert.ok(client, "guest turns never listened");
    assert.equal(client.hello.vm_id, VM);
    const ended = client.waitFor((m) => m.type === "TurnEnded" && m.turn_id === 0, 20_000);
    await client.send({ type: "Secrets", env: { API_KEY: "sk-cli" } });
    await ended;
    const out = await child.output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    assert.equal(await Deno.readTextFile(`${dir}/api-key`), "sk-cli\n");
    client.close();
  } finally {
    if (!exited) child.kill();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("guest turns refuses a missing mode, listener or VM id with exit 2 and a reason", async (t) => {
  const cases: { args: string[]; want: RegExp }[] = [
    { args: ["--tcp", "127.0.0.1:1", "--vm-id", VM, "--config-dir", "/nonexistent"], want: /no mode/ },
    { args: ["--tcp", "127.0.0.1:1", "--vm-id", VM, "--turn-cmd", "true"], want: /--tcp needs a channel key/ },
    {
      args: ["--unix", "/tmp/x", "--vm-id", VM, "--turn-cmd", "true", "--channel-key-file", "/nonexistent"],
      want: /does not exist/,
    },
    { args: ["--vm-id", VM, "--turn-cmd", "true"], want: /at least one of --tcp/ },
    { args: ["--stdio", "--turn-cmd", "true", "--config-dir", "/nonexistent"], want: /no VM id/ },
    { args: ["--tcp", "127.0.0.1:1", "--vm-id", "nope", "--turn-cmd", "true"], want: /not a UUID/ },
    { args: ["--tcp", "localhost", "--vm-id", VM, "--turn-cmd", "true"], want: /not HOST:PORT/ },
    { args: ["--device", "/dev/tty0", "--vm-id", VM, "--turn-cmd", "true"], want: /hand it over with --stdio/ },
    { args: ["--device", "/run/bcd-guest/no-such-port", "--vm-id", VM, "--turn-cmd", "true"], want: /does not exist/ },
  ];
  for (const c of cases) {
    await t.step(c.args.join(" "), async () => {
      const out = await _guest(c.args).output();
      assert.equal(out.code, 2);
      assert.match(new TextDecoder().decode(out.stderr), c.want);
    });
  }
});

Deno.test("guest turns --stdio serves a handed-over channel under the role's flags: Hello first, Ping, RunTurn", async () => {
  const proc = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...roleFlags("guest"),
      `${ROOT}roles/guest.ts`,
      "turns",
      "--stdio",
      "--vm-id",
      VM,
      "--turn-cmd",
      "true",
    ],
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
    env: { BCD_LOG_LEVEL: "warn" },
  }).spawn();
  const client = await TurnsClient.attach(
    { readable: proc.stdout, writable: proc.stdin },
    { logger: silentLogger(), helloTimeoutMs: 20_000 },
  );
  try {
    assert.equal(client.hello.vm_id, VM);
    await client.ping();
    const ended = client.waitFor((m) => m.type === "TurnEnded" && m.turn_id === 0, 20_000);
    await client.send({ type: "RunTurn", turn_id: 0 });
    await ended;
  } finally {
    client.close();
    proc.kill();
    await proc.status;
  }
});
