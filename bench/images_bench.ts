/**
 * `deno task bench:images`: the bundle walk over a 64 MiB, 10,000-file gzip tar against GNU `tar -tzf` on the same
 * file in the same run (goal: walk at least 0.8× tar's speed), and the qcow2 header check latency on a real
 * qemu-img image (goal: well under 1 ms). Prints one line per figure and a JSON summary.
 *
 * @module
 */
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { hasQemuImg, qemuImg } from "../core/images/_qemu_img.ts";
import { type RawMember, tarOf } from "../core/images/_tar_gen.ts";
import { MAX_BYTES, MAX_FILES, walk } from "../core/images/bundle_walk.ts";
import { checkImage, parseQcow2Header, readQcow2Prefix } from "../core/images/qcow2_header.ts";

function _print(line: string): void {
  Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));
}

function _median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** 10,000 files, 64 MiB of text-like content in all (compresses about 4:1, as config does). */
function _bundle(): Uint8Array {
  const words = ["alpha", "beta", "gamma", "delta", "node", "gpu", "cpu", "memory", "= 1\n", "true\n", "[section]\n"];
  let x = 12345;
  const pool = new Uint8Array(1 << 20);
  for (let i = 0; i < pool.length;) {
    x = (x * 1103515245 + 12345) >>> 0;
    const w = new TextEncoder().encode(words[x % words.length]! + (x % 7 === 0 ? String(x % 997) : " "));
    pool.set(w.subarray(0, Math.min(w.length, pool.length - i)), i);
    i += w.length;
  }
  const members: RawMember[] = [];
  const dirs = 100;
  for (let d = 0; d < dirs; d++) members.push({ name: `d${d}/` });
  const files = MAX_FILES - dirs;
  const per = Math.floor(MAX_BYTES / files);
  let left = MAX_BYTES;
  for (let f = 0; f < files; f++) {
    const size = f === files - 1 ? left : per;
    left -= size;
    const off = (f * 7919) % (pool.length - size);
    members.push({ name: `d${f % dirs}/f${f}.toml`, content: pool.subarray(off, off + size) });
  }
  return new Uint8Array(gzipSync(tarOf(members)));
}

const dir = await Deno.makeTempDir({ prefix: "bcd-bench-images-" });
try {
  const tgz = _bundle();
  const file = join(dir, "bundle.tgz");
  await Deno.writeFile(file, tgz);
  const runs = Number(Deno.env.get("BENCH_RUNS") ?? 5);
  const tarMs: number[] = [];
  const walkMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    let t0 = performance.now();
    const out = await new Deno.Command("tar", { args: ["-tzf", file], stdout: "null", stderr: "null" }).output();
    if (!out.success) throw new Error("tar -tzf failed");
    tarMs.push(performance.now() - t0);
    t0 = performance.now();
    const summary = await walk(await Deno.readFile(file));
    walkMs.push(performance.now() - t0);
    if (summary.members !== MAX_FILES || summary.bytes !== MAX_BYTES) throw new Error("unexpected bundle summary");
  }
  const tar = _median(tarMs);
  const w = _median(walkMs);
  const ratio = tar / w;
  _print(`bundle: ${tgz.length} compressed bytes, ${MAX_FILES} members, ${MAX_BYTES} content bytes`);
  _print(`tar -tzf (anchor): median ${tar.toFixed(1)} ms over ${runs} runs`);
  _print(`walk():            median ${w.toFixed(1)} ms over ${runs} runs`);
  _print(`walk speed / tar -tzf speed = ${ratio.toFixed(2)}x (goal >= 0.8x)`);

  const summary: Record<string, unknown> = { tar_ms: tar, walk_ms: w, walk_vs_tar: ratio };
  if (hasQemuImg()) {
    await qemuImg(dir, "create", "-q", "-f", "qcow2", "v3.qcow2", "10G");
    const img = join(dir, "v3.qcow2");
    const n = 2000;
    for (let i = 0; i < 100; i++) await checkImage(img, "qcow2");
    const lat: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await checkImage(img, "qcow2");
      lat.push(performance.now() - t0);
    }
    lat.sort((a, b) => a - b);
    const prefix = await readQcow2Prefix(img);
    const t0 = performance.now();
    for (let i = 0; i < n; i++) parseQcow2Header(prefix);
    const parseUs = ((performance.now() - t0) / n) * 1000;
    const med = lat[Math.floor(n / 2)]! * 1000;
    const p99 = lat[Math.floor(n * 0.99)]! * 1000;
    _print(`qcow2 checkImage (open, read first cluster, parse): median ${med.toFixed(0)} µs, p99 ${p99.toFixed(0)} µs`);
    _print(`qcow2 header parse alone: ${parseUs.toFixed(1)} µs; median check / 1 ms goal = ${(med / 1000).toFixed(3)}`);
    Object.assign(summary, { qcow2_check_median_us: med, qcow2_check_p99_us: p99, qcow2_parse_us: parseUs });
  } else {
    _print("qcow2 latency skipped: `qemu-img` is not installed (Debian package `qemu-utils`)");
  }
  _print(JSON.stringify(summary));
} finally {
  await Deno.remove(dir, { recursive: true });
}
