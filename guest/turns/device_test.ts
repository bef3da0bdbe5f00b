// The character-device transport against a real pseudo-terminal in raw mode (what an hvc or serial console is):
// a python helper holds the pty's master and relays it to its stdin/stdout, playing the host. The pty starts in
// cooked mode with echo; the transport must put it in raw mode, or the host would read its own lines back. Deno's
// setRaw leaves output post-processing on, so lines arrive ending "\r\n": "\r" is JSON whitespace, and the line is
// compared without it.
import assert from "node:assert/strict";
import { silentLogger } from "../../core/log/mod.ts";
import { decodeLine, encodeMessage, LineSplitter } from "../../core/turns/mod.ts";
import { TurnsAgent } from "./agent.ts";
import { deviceConnections } from "./transport.ts";

const VM = "7e57a1b2-0000-4000-8000-0123456789ab";

const PTY_RELAY = `
import os, pty, sys, select
m, s = pty.openpty()
print(os.ttyname(s), flush=True)
while True:
    r, _, _ = select.select([m, 0], [], [])
    if m in r:
        d = os.read(m, 65536)
        if not d: break
        os.write(1, d)
    if 0 in r:
        d = os.read(0, 65536)
        if not d: break
        os.write(m, d)
`;

async function _python(): Promise<string | null> {
  try {
    const out = await new Deno.Command("python3", { args: ["-c", "import pty"] }).output();
    return out.success ? null : "python3 has no pty module";
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return "python3 is not installed";
    throw e;
  }
}

const skip = await _python();
if (skip) console.log(`device_test: skipped: ${skip}`);

Deno.test({
  name: "a raw tty device carries the protocol: Hello first, Ping/Pong, RunTurn",
  ignore: skip !== null,
  sanitizeOps: false, // a blocking read on the device stays parked in the thread pool until the pty hangs up
  sanitizeResources: false,
  fn: async () => {
    const relay = new Deno.Command("python3", { args: ["-c", PTY_RELAY], stdin: "piped", stdout: "piped" }).spawn();
    const reader = relay.stdout.getReader();
    const writer = relay.stdin.getWriter();
    const split = new LineSplitter();
    const pending: string[] = [];
    const nextLine = async (): Promise<string> => {
      while (pending.length === 0) {
        const { value, done } = await reader.read();
        if (done) throw new Error("relay closed");
        for (const ev of split.push(value)) if ("line" in ev) pending.push(ev.line);
      }
      return pending.shift()!.replace(/\r$/, "");
    };
    const slave = await nextLine();
    assert.match(slave, /^\/dev\/pts\/\d+$/);
    const dir = await Deno.makeTempDir();
    const stop = new AbortController();
    const agent = new TurnsAgent({
      vmId: VM,
      guestdVersion: "0.1.0",
      mode: { kind: "native", turnArgv: ["true"] },
      listeners: [deviceConnections(slave, silentLogger())],
      logger: silentLogger(),
      signal: stop.signal,
    });
    const done = agent.run();
    try {
      assert.deepEqual(decodeLine(await nextLine(), "guest-to-host"), {
        type: "Hello",
        vm_id: VM,
        guestd_version: "0.1.0",
      });
      const send = (m: Parameters<typeof encodeMessage>[0]) =>
        writer.write(new TextEncoder().encode(encodeMessage(m, "host-to-guest")));
      await send({ type: "Ping" });
      assert.equal(await nextLine(), `{"type":"Pong"}`);
      await send({ type: "RunTurn", turn_id: 0 });
      assert.equal(decodeLine(await nextLine(), "guest-to-host").type, "TurnStarted");
      assert.equal(decodeLine(await nextLine(), "guest-to-host").type, "TurnEnded");
    } finally {
      stop.abort();
      await done;
      await writer.close();
      relay.kill();
      await relay.status;
      reader.releaseLock();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
