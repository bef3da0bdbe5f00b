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
 * - Two ceilings of this host's pipes, in the same interleaved rounds, measured with programs that are not bcd's
 *   (`python3`; the rows are skipped, with the reason printed, where it is missing): at 16 bytes, the round trips of a
 *   client with no runtime in its way (blocking `os.write`/`os.read` through `cat`), the most any echo gets from these
 *   pipes whatever drives it; at 256 KiB, an echo that answers a message only once it holds it whole (as `guest serve`
 *   must: a message is checked and handled whole), driven like the anchor, the most a store-and-forward echo gets where
 *   `cat` forwards as it reads.
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
 * plain Web Streams of `Deno.Command` (no framing): what a pipe between two processes gives a Deno program. With
 * `cmd` another echo driven the same way.
 */
async function pipeTrips(size: number, ms: number, cmd: readonly string[] = ["cat"]): Promise<Trips> {
  const child = new Deno.Command(cmd[0]!, { args: cmd.slice(1), stdin: "piped", stdout: "piped", stderr: "inherit" })
    .spawn();
  const w = child.stdin.getWriter();
  const r = child.stdout.getReader();
  const body = new Uint8Array(size).fill(3);
  const trip = async () => {
    const written = w.write(body); // concurrently with the reads: cat's output pipe holds 64 KiB
    let got = 0;
    while (got < size) {
      const { value, done } = await r.read();
      if (done) throw new Error(`${cmd[0]} ended early`);
      got += value.length;
    }
    await written;
  };
  const trips = await timedTrips(size, ms, trip);
  await w.close();
  const status = await child.status;
  if (!status.success) throw new Error(`${cmd.join(" ")} exited with ${status.code}`);
  return trips;
}

/**
 * A store-and-forward echo (`python3`): reads `size` bytes whole, then writes them back, until its input ends. It
 * forwards nothing before it holds the whole message, as `guest serve` answers an Echo once it holds it whole.
 */
const STORE_AND_FORWARD = `
import os, sys
size = int(sys.argv[1])
buf = bytearray(size)
view = memoryview(buf)
while True:
    got = 0
    while got < size:
        n = os.readv(0, [view[got:]])
        if n == 0:
            sys.exit(0)
        got += n
    out = 0
    while out < size:
        out += os.write(1, view[out:])
`;

/**
 * Round trips of `size` bytes through `cat` driven by a client with no runtime in its way (`python3`: one blocking
 * `os.write`, then `os.read` until the bytes are back), for `ms` after a warm-up; trips/s.
 */
const BLOCKING_CLIENT = `
import os, subprocess, sys, time
size, ms, warm_ms = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cat = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
w, r = cat.stdin.fileno(), cat.stdout.fileno()
msg = b"x" * size
def trip():
    os.write(w, msg)
    got = 0
    while got < size:
        got += len(os.read(r, 65536))
for phase in (warm_ms, ms):
    n = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < phase / 1000:
        trip()
        n += 1
print(n / (time.perf_counter() - t0))
cat.stdin.close()
cat.wait()
`;

/** Why the `python3` ceilings cannot run here, or null when they can. */
async function _noPython(): Promise<string | null> {
  try {
    const out = await new Deno.Command("python3", {
      args: ["-c", "import os; os.readv"],
      stdout: "null",
      stderr: "null",
    })
      .output();
    return out.success ? null : "python3 has no os.readv";
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return "python3 is not installed";
    throw e;
  }
}

/** {@link BLOCKING_CLIENT}'s trips/s. */
async function blockingTrips(size: number, ms: number): Promise<number> {
  const out = await new Deno.Command("python3", {
    args: ["-c", BLOCKING_CLIENT, String(size), String(ms), String(WARM_MS)],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const rate = Number(new TextDecoder().decode(out.stdout).trim());
  if (!out.success || !(rate > 0)) throw new Error(`the blocking client failed (exit ${out.code})`);
  return rate;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** The ceiling measured beside an {@link echoVsPipe} round: trips/s of a program that is not bcd's. */
type Ceiling = (size: number, ms: number) => Promise<number>;

/** Interleaved rounds of serve, of the pipe anchor and of `ceiling` (when given); medians over rounds, ratios per round. */
async function echoVsPipe(size: number, ms: number, rounds: number, ceiling: Ceiling | null) {
  const serve: Trips[] = [];
  const pipe: Trips[] = [];
  const top: number[] = [];
  for (let i = 0; i < rounds; i++) {
    pipe.push(await pipeTrips(size, ms));
    serve.push(await echoTrips(size, ms));
    if (ceiling !== null) top.push(await ceiling(size, ms));
  }
  return {
    serve: {
      mbps: median(serve.map((x) => x.mbps)),
      trips: median(serve.map((x) => x.trips)),
      warm: median(serve.map((x) => x.warm)),
    },
    pipe: { mbps: median(pipe.map((x) => x.mbps)), trips: median(pipe.map((x) => x.trips)) },
    ratio: median(serve.map((x, i) => x.trips / pipe[i]!.trips)),
    ceiling: ceiling === null ? null : {
      trips: median(top),
      /** The ceiling against the pipe anchor, and serve against the ceiling, per round. */
      ofPipe: median(top.map((x, i) => x / pipe[i]!.trips)),
      serveOf: median(top.map((x, i) => serve[i]!.trips / x)),
    },
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
const noPython = await _noPython();
const big = await echoVsPipe(
  256 * KIB,
  1500,
  ROUNDS,
  noPython === null
    ? async (size, ms) => (await pipeTrips(size, ms, ["python3", "-c", STORE_AND_FORWARD, String(size)])).trips
    : null,
);
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
if (big.ceiling === null) console.log(`ceiling of a store-and-forward echo at 256 KiB: skipped (${noPython})`);
else {
  console.log(
    `ceiling: a store-and-forward echo (python3, answers once it holds the message whole), same client: ` +
      `${fmt(big.ceiling.trips, 0)} trips/s = ${fmt(big.ceiling.ofPipe)}× the pipe; guest serve is ` +
      `${fmt(big.ceiling.serveOf)}× it`,
  );
}
const tiny = await echoVsPipe(16, 1000, ROUNDS, noPython === null ? blockingTrips : null);
console.log(`pipe (cat, raw streams) 16-byte round trips:          ${fmt(tiny.pipe.trips, 0)} trips/s (anchor)`);
console.log(
  `echo 16-byte round trips through guest serve (pipe): ${fmt(tiny.serve.trips, 0)} trips/s = ${fmt(tiny.ratio)}× ` +
    `the pipe (goal ≥ 20,000 trips/s); in each round's first ${WARM_MS} ms, not counted: ${fmt(tiny.serve.warm, 0)} ` +
    `trips/s`,
);
if (tiny.ceiling === null) console.log(`ceiling of these pipes at 16 bytes: skipped (${noPython})`);
else {
  console.log(
    `ceiling: 16-byte round trips through cat from a client with no runtime in its way (python3, blocking ` +
      `os.write/os.read): ${fmt(tiny.ceiling.trips, 0)} trips/s; the goal's 20,000 is ${
        fmt(20_000 / tiny.ceiling.trips)
      }× it; guest serve is ${fmt(tiny.ceiling.serveOf)}× it`,
  );
}
console.log(`load average: ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
