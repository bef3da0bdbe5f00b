/**
 * `deno task bench:framing`: the framing decoder's throughput against memcpy (TypedArray.set) measured in the
 * same run, and Echo round trips through `bcd-guest serve` over a pipe.
 *
 * - 256 KiB bodies, whole in the chunk the decoder is fed (views, no copy), and split into 64 KiB reads (the
 *   reassembly copy), each against in-cache memcpy of 256 KiB: goal ≥ 0.5×.
 * - 16-byte bodies in frames/s, on the raw path and with views: goal ≥ 20 M frames/s.
 * - Echo round trips of 256 KiB and of 16 bytes through `guest serve` (the role's own flags) in MB/s and trips/s.
 *
 * @module
 */
import { Decoder, encodeFrame, Kind } from "../../core/framing/mod.ts";
import { childConn } from "./framing_conn.ts";
import { FramingClient } from "./framing_client.ts";

const KIB = 1024;

function timeFor(ms: number, step: () => number): { units: number; seconds: number } {
  // Warm up, then run whole rounds until `ms` passed.
  for (let i = 0; i < 20; i++) step();
  let units = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < ms) {
    units += step();
    t = performance.now();
  }
  return { units, seconds: (t - t0) / 1000 };
}

function memcpy(size: number): number {
  const src = new Uint8Array(size).fill(7);
  const dst = new Uint8Array(size);
  const r = timeFor(1000, () => {
    for (let i = 0; i < 16; i++) dst.set(src);
    return 16 * size;
  });
  return r.units / r.seconds;
}

function stream(bodySize: number, count: number): Uint8Array {
  const frame = encodeFrame(Kind.Echo, new Uint8Array(bodySize).fill(1));
  const out = new Uint8Array(frame.length * count);
  for (let i = 0; i < count; i++) out.set(frame, i * frame.length);
  return out;
}

function decodeBytes(buf: Uint8Array, readSize: number): number {
  const dec = new Decoder({ from: "host" });
  let sum = 0;
  const onFrame = (_k: number, _b: Uint8Array, s: number, e: number) => void (sum += e - s);
  const r = timeFor(1500, () => {
    for (let o = 0; o < buf.length; o += readSize) dec.pushRaw(buf.subarray(o, o + readSize), onFrame);
    return buf.length;
  });
  if (sum === 0) throw new Error("nothing decoded");
  return r.units / r.seconds;
}

function decodeFrames(buf: Uint8Array, perRound: number, views: boolean): number {
  const dec = new Decoder({ from: "host" });
  let n = 0;
  const raw = (_k: number, _b: Uint8Array, _s: number, _e: number) => void n++;
  const viewed = (f: { body: Uint8Array }) => void (n += f.body.length > 0 ? 1 : 0);
  const r = timeFor(1500, () => {
    if (views) dec.push(buf, viewed);
    else dec.pushRaw(buf, raw);
    return perRound;
  });
  if (n === 0) throw new Error("nothing decoded");
  return r.units / r.seconds;
}

async function echoTrips(size: number, ms: number): Promise<{ mbps: number; trips: number }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "guest", "serve"],
    cwd: new URL("../../", import.meta.url).pathname,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
    env: { BCD_LOG_LEVEL: "warn" },
  }).spawn();
  const c = await FramingClient.attach(childConn(child), { requestTimeoutMs: 30_000, readSize: 512 * KIB });
  const body = new Uint8Array(size).map((_, i) => i & 0xff);
  for (let i = 0; i < 10; i++) await c.echo(body);
  let trips = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    await c.echo(body);
    trips++;
  }
  const seconds = (performance.now() - t0) / 1000;
  await c.stop();
  await child.status;
  c.close();
  // Each trip carries the body both ways.
  return { mbps: (2 * trips * size) / seconds / 1e6, trips: trips / seconds };
}

const fmt = (n: number, d = 2) => n.toFixed(d);
const copy256 = memcpy(256 * KIB);
const whole = decodeBytes(stream(256 * KIB, 16), 256 * KIB * 16 + 16 * 5);
const split = decodeBytes(stream(256 * KIB, 16), 64 * KIB);
const small = stream(16, 50_000);
const rawFrames = decodeFrames(small, 50_000, false);
const viewFrames = decodeFrames(small, 50_000, true);
console.log(`memcpy (TypedArray.set) 256 KiB, in cache:        ${fmt(copy256 / 1e9)} GB/s (anchor)`);
// Bodies that arrive whole are handed out as views: no byte is copied, so this is header parsing per frame, not a
// copy rate, and its ratio to memcpy is not a comparison of like with like.
console.log(
  `decode 256 KiB bodies arriving whole (views, zero copy): ${fmt(whole / 1e9)} GB/s of body handed out per second`,
);
console.log(
  `decode 256 KiB bodies, 64 KiB reads (reassembly):   ${fmt(split / 1e9)} GB/s = ${fmt(split / copy256)}× memcpy`,
);
console.log(`decode 16-byte bodies, raw path:                     ${fmt(rawFrames / 1e6)} M frames/s (goal 20)`);
console.log(`decode 16-byte bodies, with views:                   ${fmt(viewFrames / 1e6)} M frames/s`);
const big = await echoTrips(256 * KIB, 2000);
console.log(
  `echo 256 KiB round trips through guest serve (pipe): ${fmt(big.mbps, 1)} MB/s (${fmt(big.trips, 0)} trips/s)`,
);
const tiny = await echoTrips(16, 1000);
console.log(`echo 16-byte round trips through guest serve (pipe): ${fmt(tiny.trips, 0)} trips/s`);
