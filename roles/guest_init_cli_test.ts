/**
 * `bcd-guest init TTY` and `worker TTY SIBLING` over a pseudo-terminal: a python3 relay opens the pty (in raw
 * mode, as a VM's control console) and copies bytes between the test and the pty's master. Skips, saying why,
 * without python3.
 */
import assert from "node:assert/strict";
import { defaultRootConfig, Kind, ROOT_STAGES } from "../core/framing/mod.ts";
import { childConn } from "../runtimes/guest/framing_conn.ts";
import { FramingClient } from "../runtimes/guest/framing_client.ts";
import { roleFlags } from "./permissions.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const RELAY = `${ROOT}fixtures/guest/pty_relay.py`;

const python = await new Deno.Command("python3", { args: ["-c", "import pty, tty"] }).output().then(
  (o) => o.success,
  () => false,
);
if (!python) console.log("guest_init_cli_test: skipped: python3 with the pty module is missing");

function guest(args: string[], stdio: "null" | "piped" = "null", logLevel = "warn"): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", ...roleFlags("guest"), `${ROOT}roles/guest.ts`, ...args],
    stdin: "null",
    stdout: stdio,
    stderr: "piped",
    env: { BCD_LOG_LEVEL: logLevel },
  }).spawn();
}

/** Reads `c`'s stderr until a line holds `needle`; the text so far, and the rest of the stream drained. */
async function stderrUntil(c: Deno.ChildProcess, needle: string): Promise<{ seen: string; rest: Promise<string> }> {
  const reader = c.stderr.getReader();
  const dec = new TextDecoder();
  let seen = "";
  while (!seen.includes(needle)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`stderr ended before ${JSON.stringify(needle)}: ${seen}`);
    seen += dec.decode(value, { stream: true });
  }
  const rest = (async () => {
    let more = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return more;
      more += dec.decode(value, { stream: true });
    }
  })();
  return { seen, rest };
}

/** A relay and the slave's path. */
async function relay(): Promise<{ child: Deno.ChildProcess; tty: string }> {
  const child = new Deno.Command("python3", { args: [RELAY], stdin: "piped", stdout: "piped", stderr: "piped" })
    .spawn();
  const reader = child.stderr.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the relay ended before it named its tty");
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  void child.stderr.cancel().catch(() => {});
  return { child, tty: text.split("\n")[0]! };
}

async function errText(c: Deno.ChildProcess): Promise<string> {
  return new TextDecoder().decode(await new Response(c.stderr).arrayBuffer());
}

Deno.test({
  name: "init serves a tty in raw mode: an Echo of every byte value, a ping, a stop, exit 0",
  ignore: !python,
  async fn() {
    const r = await relay();
    const g = guest(["init", r.tty]);
    const err = errText(g);
    const c = await FramingClient.attach(childConn(r.child), { requestTimeoutMs: 20_000 });
    const every = Uint8Array.from({ length: 256 * 4 }, (_, i) => i & 0xff);
    await c.echo(every);
    await c.ping();
    assert.equal(await c.stop(), null);
    assert.equal((await g.status).code, 0, await err);
    c.close();
    await r.child.status;
  },
});

Deno.test("init fails at once on a path that is no tty", async () => {
  const g = guest(["init", "/dev/null"]);
  const err = await errText(g);
  assert.equal((await g.status).code, 1);
  // "At once": refused as no tty, never as a tty that did not appear (the path exists, so the 30 s wait never ran).
  assert.match(err, /not a tty/);
  assert.doesNotMatch(err, /did not appear/);
});

Deno.test({
  name: "init TTY layered starts the worker, which fails at the layout stage without a layered root, and ends with 12",
  ignore: !python,
  async fn() {
    const r = await relay();
    const g = guest(["init", r.tty, "layered", "--fake-root", "console=hvc0"]);
    const err = errText(g);
    const c = await FramingClient.attach(childConn(r.child), { requestTimeoutMs: 20_000 });
    const a = await c.configureRoot(defaultRootConfig());
    assert.deepEqual("failed" in a ? a.failed.stage : a, "layout");
    const status = ROOT_STAGES.find((s) => s.stage === "layout")!.status;
    assert.equal((await g.status).code, status, await err);
    c.close();
    await r.child.status;
  },
});

Deno.test({
  name: "the worker on a tty in raw mode: Ready, an execution with every byte value, a stop",
  ignore: !python,
  async fn() {
    const r = await relay();
    const cmdline = "nvx_sandbox=1 nvx_layer=distro,0xd0003000,erofs:1234";
    const g = guest(["worker", r.tty, "1", "--fake-root", cmdline]);
    const err = errText(g);
    const c = await FramingClient.attach(childConn(r.child), { requestTimeoutMs: 20_000 });
    assert.ok("ready" in (await c.configureRoot(defaultRootConfig())));
    const parts: Uint8Array[] = [];
    const peer = await c.execute({ id: 1n, generation: 1n }, {
      chunk: 4096,
      input: { unit: "frames", size: 4 },
      output: { unit: "frames", size: 8 },
      sharedPool: true,
      graceMs: 500,
      settlementMs: 200,
      timeoutMs: 10_000,
      stdin: true,
      argv: ["/bin/cat"],
    }, (_s, b) => void parts.push(b));
    const every = Uint8Array.from({ length: 256 * 16 }, (_, i) => i & 0xff);
    await peer.writeInput(every);
    await peer.endInput();
    const o = await peer.terminal;
    assert.deepEqual(o.status, { kind: "exit", code: 0 });
    const got = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((o, p) => (got.set(p, o), o + p.length), 0);
    assert.deepEqual(got, every);
    assert.equal(await c.stop(), null);
    assert.equal((await g.status).code, 0, await err);
    c.close();
    await r.child.status;
  },
});

Deno.test("usage errors of init and worker, and idle runs until a signal ends it", async () => {
  for (const args of [["init"], ["init", "/dev/tty", "other"], ["worker"], ["worker", "/dev/tty", "x"]]) {
    const g = guest(args);
    await errText(g);
    assert.equal((await g.status).code, 2, args.join(" "));
  }
  // idle says when it waits; the signal goes only then, so the status proves the signal ended it, not a start-up exit.
  const idle = guest(["idle"], "null", "info");
  let exited = false;
  const status = idle.status.then((s) => (exited = true, s));
  const { rest } = await stderrUntil(idle, "idle until a signal ends it");
  assert.equal(exited, false, "idle ended by itself");
  idle.kill("SIGTERM");
  const st = await status;
  await rest;
  assert.equal(st.signal, "SIGTERM");
  assert.equal(Kind.Stop, 4);
});
