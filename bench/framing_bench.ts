/**
 * `deno task bench:framing`: the framing decoder's throughput against memcpy (TypedArray.set) measured in the
 * same run, and Echo round trips through `bcd-guest serve` over a pipe.
 *
 * - 256 KiB bodies, whole in the chunk the decoder is fed (views, no copy), and split into 64 KiB reads (the
 *   reassembly copy), each against in-cache memcpy of 256 KiB: goal ≥ 0.5×.
 * - 16-byte bodies in frames/s, on the raw path and with views: goal ≥ 20 M frames/s.
 * - Echo round trips of 256 KiB and of 16 bytes through `guest serve` (the role's own flags) in MB/s and trips/s,
 *   against the same round trips of raw bytes through `cat` over the same pipes (the anchor), in interleaved rounds:
 *   goals ≥ 0.5× the pipe at 256 KiB and ≥ 20,000 trips/s at 16 bytes. Each round starts a new `guest serve` (and
 *   `cat`), waits for it with 10 round trips, then runs round trips for {@link WARM_MS} without counting them: the serve loop and the client's
 *   path reach V8's optimized tiers within the first few thousand trips, and a session serves far more than that, so
 *   the figure is the steady rate. The warm-up's own rate is printed beside it (the rate a new session starts at).
 *
 * @module
 */
import { Decoder, encodeFrame, Kind } from "../core/framing/mod.ts";
import { childConn } from "../runtimes/guest/framing_conn.ts";
import { FramingClient } from "../runtimes/guest/framing_client.ts";

const KIB = 1024;
/** Round trips run before each round's count starts (see the module doc). */
const WARM_MS = 300;

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

interface Trips {
  mbps: number;
  trips: number;
  /** Trips per second during the warm-up. */
  warm: number;
}

/**
 * Runs 10 trips (the first waits for the peer to start), then trips for {@link WARM_MS}, then counts whole trips for
 * `ms`; the rates of the last two phases.
 */
async function timedTrips(size: number, ms: number, trip: () => Promise<void>): Promise<Trips> {
  for (let i = 0; i < 10; i++) await trip();
  let warmed = 0;
  const w0 = performance.now();
  while (performance.now() - w0 < WARM_MS) {
    await trip();
    warmed++;
  }
  const warm = warmed / ((performance.now() - w0) / 1000);
  let trips = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    await trip();
    trips++;
  }
  const seconds = (performance.now() - t0) / 1000;
  // Each trip carries the body both ways.
  return { mbps: (2 * trips * size) / seconds / 1e6, trips: trips / seconds, warm };
}

/** Echo round trips of `size`-byte bodies through `bcd-guest serve` (the role's task and flags), for `ms`. */
async function echoTrips(size: number, ms: number): Promise<Trips> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["task", "-q", "guest", "serve"],
    cwd: new URL("..", import.meta.url).pathname,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
    env: { BCD_LOG_LEVEL: "warn" },
  }).spawn();
  const c = await FramingClient.attach(childConn(child), { requestTimeoutMs: 30_000, readSize: 512 * KIB });
  const body = new Uint8Array(size).map((_, i) => i & 0xff);
  const r = await timedTrips(size, ms, () => c.echo(body));
  await c.stop();
  await child.status;
  c.close();
  return r;
}

/**
 * The anchor: the same round trips of raw bytes through `cat` over the same kind of pipes, read and written with the
 * plain Web Streams of `Deno.Command` (no framing): what a pipe between two processes gives a Deno program.
 */
async function pipeTrips(size: number, ms: number): Promise<Trips> {
  const child = new Deno.Command("cat", { stdin: "piped", stdout: "piped", stderr: "inherit" }).spawn();
  const w = child.stdin.getWriter();
  const r = child.stdout.getReader();
  const body = new Uint8Array(size).fill(3);
  const trip = async () => {
    const written = w.write(body); // concurrently with the reads: cat's output pipe holds 64 KiB
    let got = 0;
    while (got < size) {
      const { value, done } = await r.read();
      if (done) throw new Error("cat ended early");
      got += value.length;
    }
    await written;
  };
  const trips = await timedTrips(size, ms, trip);
  await w.close();
  await child.status;
  return trips;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Interleaved rounds of serve and of the pipe anchor; medians over rounds, ratios per round. */
async function echoVsPipe(size: number, ms: number, rounds: number) {
  const serve: Trips[] = [];
  const pipe: Trips[] = [];
  for (let i = 0; i < rounds; i++) {
    pipe.push(await pipeTrips(size, ms));
    serve.push(await echoTrips(size, ms));
  }
  return {
    serve: {
      mbps: median(serve.map((x) => x.mbps)),
      trips: median(serve.map((x) => x.trips)),
      warm: median(serve.map((x) => x.warm)),
    },
    pipe: { mbps: median(pipe.map((x) => x.mbps)), trips: median(pipe.map((x) => x.trips)) },
    ratio: median(serve.map((x, i) => x.trips / pipe[i]!.trips)),
  };
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
const ROUNDS = 3;
const big = await echoVsPipe(256 * KIB, 1500, ROUNDS);
console.log(
  `pipe (cat, raw streams) 256 KiB round trips:          ${fmt(big.pipe.mbps, 1)} MB/s (${
    fmt(big.pipe.trips, 0)
  } trips/s) (anchor)`,
);
console.log(
  `echo 256 KiB round trips through guest serve (pipe): ${fmt(big.serve.mbps, 1)} MB/s (${
    fmt(big.serve.trips, 0)
  } trips/s)` +
    ` = ${fmt(big.ratio)}× the pipe (goal ≥ 0.5×); in each round's first ${WARM_MS} ms, not counted: ` +
    `${fmt((2 * big.serve.warm * 256 * KIB) / 1e6, 1)} MB/s`,
);
const tiny = await echoVsPipe(16, 1000, ROUNDS);
console.log(`pipe (cat, raw streams) 16-byte round trips:          ${fmt(tiny.pipe.trips, 0)} trips/s (anchor)`);
console.log(
  `echo 16-byte round trips through guest serve (pipe): ${fmt(tiny.serve.trips, 0)} trips/s = ${fmt(tiny.ratio)}× ` +
    `the pipe (goal ≥ 20,000 trips/s); in each round's first ${WARM_MS} ms, not counted: ${fmt(tiny.serve.warm, 0)} ` +
    `trips/s`,
);
console.log(`load average: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
