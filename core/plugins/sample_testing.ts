/**
 * Test support: the sample driver plugin the plugin tests run (directly, and through the root helper's relay), written
 * into a plugin directory by the test.
 *
 * @module
 */

/**
 * The sample plugin, in JavaScript run by this Deno: it speaks protocol 1 (or `PROTOCOL`) and serves
 *   echo   the input back, with its pid
 *   fail   an error frame `bad-input`
 *   slow   nothing until bcd cancels it, then an error frame `cancelled`
 *   boom   a line on stderr, then exit 3
 *   flood  2 MiB without a newline on stdout
 *   noisy  2 MiB on stderr, then the input back
 *   whoami its uid, gid and open descriptors (`/proc/self/fd` links; Deno grants /proc only with --allow-all, which this test program runs with)
 *   runtime an in-memory instance runtime (list, apply, remove; one unmanaged domain "hand-made"); MODE `notaps`
 *          forgets every tap but the first
 * MODE `hang` answers the hello and then nothing; MODE `mute` never says hello.
 */
const SAMPLE = (mode: string, protocol: number) => `
const MODE = ${JSON.stringify(mode)}, PROTOCOL = ${protocol};
const enc = new TextEncoder();
async function put(stream, s) { const b = enc.encode(s); let o = 0; while (o < b.length) o += await stream.write(b.subarray(o)); }
const send = (f) => put(Deno.stdout, JSON.stringify(f) + "\\n");
const slow = new Set();
const domains = new Map([["hand-made", { id: "hand-made", state: "running" }]]);
function runtime(c) {
  if (c.call === "list") return { domains: [...domains.values()] };
  if (c.call === "remove") { domains.delete(c.id); return {}; }
  const d = c.instance ? { id: c.instance.id, state: "stopped", record: c.instance } : domains.get(c.id);
  if (!d) return { taps: [] };
  d.state = c.state;
  domains.set(d.id, d);
  const taps = (d.record?.nics ?? []).map((n) => n.tap);
  return { taps: MODE === "notaps" ? taps.slice(0, 1) : c.state === "stopped" ? [] : taps };
}
let buf = "";
const dec = new TextDecoder();
for await (const chunk of Deno.stdin.readable) {
  buf += dec.decode(chunk, { stream: true });
  let i;
  while ((i = buf.indexOf("\\n")) >= 0) {
    const f = JSON.parse(buf.slice(0, i));
    buf = buf.slice(i + 1);
    if (f.t === "hello") { if (MODE !== "mute") await send({ t: "hello", protocol: PROTOCOL, name: "sample", version: "0.1.0" }); continue; }
    if (MODE === "hang" || MODE === "mute") continue;
    if (f.t === "cancel") { if (slow.delete(f.id)) await send({ t: "error", id: f.id, code: "cancelled", message: "stopped" }); continue; }
    if (f.op === "echo") await send({ t: "result", id: f.id, output: JSON.stringify({ echo: JSON.parse(f.input), pid: Deno.pid }) });
    else if (f.op === "fail") await send({ t: "error", id: f.id, code: "bad-input", message: "no such disk" });
    else if (f.op === "slow") slow.add(f.id);
    else if (f.op === "boom") { await put(Deno.stderr, "boom: disk on fire\\n"); Deno.exit(3); }
    else if (f.op === "flood") { const x = "x".repeat(64 * 1024); for (let n = 0; n < 32; n++) await put(Deno.stdout, x); }
    else if (f.op === "runtime") await send({ t: "result", id: f.id, output: JSON.stringify(runtime(JSON.parse(f.input))) });
    else if (f.op === "whoami") await send({ t: "result", id: f.id, output: JSON.stringify({ uid: Deno.uid(), gid: Deno.gid(), fds: [...Deno.readDirSync("/proc/self/fd")].map((e) => { try { return e.name + "=" + Deno.readLinkSync("/proc/self/fd/" + e.name); } catch { return e.name + "=gone"; } }) }) });
    else if (f.op === "noisy") { const x = "e".repeat(64 * 1024); for (let n = 0; n < 32; n++) await put(Deno.stderr, x); await send({ t: "result", id: f.id, output: f.input }); }
  }
}
`;

export interface Sample {
  readonly mode?: string;
  readonly protocol?: number;
  readonly manifest?: Record<string, unknown>;
}

/** Writes the plugin `sample` into `dir` (as `dir/sample`, whatever name `manifest` gives it): its script, its `run` wrapper and its manifest. */
export async function writeSamplePlugin(dir: string, s: Sample = {}): Promise<string> {
  const p = `${dir}/sample`;
  await Deno.mkdir(p, { mode: 0o755 });
  await Deno.chmod(p, 0o755);
  await Deno.writeTextFile(`${p}/plugin.js`, SAMPLE(s.mode ?? "good", s.protocol ?? 1));
  await Deno.chmod(`${p}/plugin.js`, 0o644);
  await Deno.writeTextFile(
    `${p}/run`,
    `#!/bin/sh\nexec '${Deno.execPath()}' run --quiet --no-config --no-lock --allow-all '${p}/plugin.js'\n`,
  );
  await Deno.chmod(`${p}/run`, 0o755);
  await Deno.writeTextFile(
    `${p}/manifest.json`,
    JSON.stringify({
      name: "sample",
      version: "0.1.0",
      protocol: 1,
      executable: "run",
      operations: ["echo", "fail", "slow", "boom", "flood", "noisy", "whoami", "runtime"],
      // a start on a loaded machine takes what it takes; the hang and cancel tests shorten only what they test
      timeouts: { handshakeMs: 120_000, invokeMs: 120_000, cancelGraceMs: 120_000 },
      ...s.manifest,
    }),
  );
  await Deno.chmod(`${p}/manifest.json`, 0o644);
  return p;
}
