/**
 * `deno task bench:journal`: the journal's write throughput against the disk's physical limit, in one run on the
 * same disk (a directory under /var/tmp, refused when it is tmpfs).
 *
 * Prints, each with its ratio to raw fsync:
 * - raw: write + fsync (and write + fdatasync) of a 200-byte record to an append-only file, one at a time;
 * - `accepted` one per transaction: sequential `journal.accept()`, each its own commit;
 * - `accepted` with group commit: 64 concurrent acceptors, committed together by the write queue;
 * - the per-operation cost of the path without an fsync (a read through the same queue), to show where time goes;
 * for both bindings: `node:sqlite` (production) and `@libsql/client`.
 *
 * Goals (issue 3): >= 0.7x raw for one per transaction, >= 10x raw records/s with group commit.
 *
 * @module
 */
import { join } from "node:path";
import { openLibsql } from "../core/journal/driver_libsql.ts";
import { openNodeSqlite } from "../core/journal/driver_node_sqlite.ts";
import { Journal } from "../core/journal/journal.ts";
import type { SqlDriver, SqlDriverFactory } from "../core/journal/sql_driver.ts";

const SLICE = Number(Deno.env.get("BCD_BENCH_SLICE") ?? "0.4");
const ROUNDS = Number(Deno.env.get("BCD_BENCH_ROUNDS") ?? "7");
const FLAGS = { kind: "inventory.refresh", retrySafe: true, selfTerminating: false };

/** `findmnt -T`: the filesystem type, source and mount point holding `path`. */
async function fsType(path: string): Promise<string> {
  const out = await new Deno.Command("findmnt", { args: ["-n", "-o", "FSTYPE,SOURCE,TARGET", "-T", path] }).output();
  if (!out.success) throw new Error(`findmnt -T ${path} failed: ${new TextDecoder().decode(out.stderr)}`);
  const [type, source, target] = new TextDecoder().decode(out.stdout).trim().split(/\s+/);
  return `${type} on ${source} (${target})`;
}

/** Runs `step` for one slice; returns operations per second. */
async function rate(step: (i: number) => Promise<number> | number): Promise<{ perSec: number; n: number }> {
  const end = performance.now() + SLICE * 1000;
  const t0 = performance.now();
  let n = 0;
  let i = 0;
  while (performance.now() < end) n += await step(i++);
  return { perSec: n / ((performance.now() - t0) / 1000), n };
}

/** A 200-byte record appended and synced, one at a time. */
function rawStep(f: Deno.FsFile, how: "fsync" | "fdatasync"): () => number {
  const rec = new Uint8Array(200).fill(0x61);
  return () => {
    f.writeSync(rec);
    if (how === "fsync") f.syncSync();
    else f.syncDataSync();
    return 1;
  };
}

const CONCURRENCY = 64;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const root = await Deno.makeTempDir({ dir: Deno.env.get("BCD_BENCH_DIR") ?? "/var/tmp", prefix: "bcd-journal-bench-" });
const journals: Journal[] = [];
const files: Deno.FsFile[] = [];
const bareDrivers: SqlDriver[] = [];
try {
  const fs = await fsType(root);
  if (fs.startsWith("tmpfs") || fs.startsWith("ramfs")) {
    throw new Error(`${root} is on ${fs}: fsync costs nothing there`);
  }
  const out = (line: string) => console.log(line);
  out(`journal bench: ${root} on ${fs}`);
  out(
    `${ROUNDS} interleaved rounds of ${SLICE}s slices; medians over rounds; ratios per round against that round's raw fsync`,
  );
  const fsyncFile = Deno.openSync(join(root, "raw-fsync.log"), { create: true, append: true });
  const dataFile = Deno.openSync(join(root, "raw-fdatasync.log"), { create: true, append: true });
  files.push(fsyncFile, dataFile);
  const drivers: [string, SqlDriverFactory][] = [["node:sqlite", openNodeSqlite], ["libsql", openLibsql]];
  const js: [string, Journal][] = [];
  for (const [name, driver] of drivers) {
    const j = await Journal.open({ dataDir: join(root, name.replace(":", "_")), bootId: "bench", driver });
    journals.push(j);
    js.push([name, j]);
  }
  // A bare connection per binding: the cost of one statement, the floor under every journal operation.
  const bare: [string, SqlDriver][] = [];
  for (const [name, driver] of drivers) {
    const d = await driver(join(root, `${name.replace(":", "_")}-bare.db`));
    bareDrivers.push(d);
    bare.push([name, d]);
  }
  const series: Record<string, number[]> = {};
  const ratios: Record<string, number[]> = {};
  const groupSizes: Record<string, number[]> = {};
  const add = (k: string, v: number, raw?: number) => {
    (series[k] ??= []).push(v);
    if (raw !== undefined) (ratios[k] ??= []).push(v / raw);
  };
  let id = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const raw = (await rate(rawStep(fsyncFile, "fsync"))).perSec;
    add("raw fsync", raw);
    add("raw fdatasync", (await rate(rawStep(dataFile, "fdatasync"))).perSec, raw);
    for (const [name, j] of js) {
      add(`${name} 1/tx`, (await rate(async () => (await j.accept(`s${id++}`, FLAGS), 1))).perSec, raw);
      const c0 = j.stats.commits, o0 = j.stats.ops;
      const g = await rate(async () => {
        await Promise.all(Array.from({ length: CONCURRENCY }, () => j.accept(`g${id++}`, FLAGS)));
        return CONCURRENCY;
      });
      add(`${name} group`, g.perSec, raw);
      (groupSizes[name] ??= []).push((j.stats.ops - o0) / (j.stats.commits - c0));
      add(`${name} no-fsync op`, (await rate(async () => (await j.get(`s${id % 97}`), 1))).perSec);
    }
    for (const [name, d] of bare) {
      add(`${name} statement`, (await rate(async () => (await d.all("SELECT 1"), 1))).perSec);
    }
  }
  const f0 = (x: number) => x.toFixed(0).padStart(8);
  const ratio = (k: string) => `${median(ratios[k]!).toFixed(2)}x raw fsync`;
  out(
    `raw write+fsync 200 B            ${f0(median(series["raw fsync"]!))} records/s  (rounds: ${
      series["raw fsync"]!.map((x) => x.toFixed(0)).join(" ")
    })`,
  );
  out(`raw write+fdatasync 200 B        ${f0(median(series["raw fdatasync"]!))} records/s  ${ratio("raw fdatasync")}`);
  for (const [name] of js) {
    const single = `${name} 1/tx`, group = `${name} group`, op = `${name} no-fsync op`;
    out(
      `${name.padEnd(12)} accepted 1/tx        ${f0(median(series[single]!))} records/s  ${
        ratio(single)
      }  (goal >= 0.70x)`,
    );
    out(
      `${name.padEnd(12)} accepted group       ${f0(median(series[group]!))} records/s  ${
        ratio(group)
      }  (goal >= 10x; ` +
        `${CONCURRENCY} concurrent, ${median(groupSizes[name]!).toFixed(1)} per commit)`,
    );
    out(
      `${name.padEnd(12)} op without fsync     ${f0(median(series[op]!))} ops/s      (${
        (1e6 / median(series[op]!)).toFixed(0)
      } us per operation through the queue, binding and transaction)`,
    );
    const st = `${name} statement`;
    out(
      `${name.padEnd(12)} bare statement       ${f0(median(series[st]!))} stmts/s    (${
        (1e6 / median(series[st]!)).toFixed(1)
      } us per SELECT 1; an accept runs 5 statements, plus BEGIN and COMMIT per group)`,
    );
  }
} finally {
  for (const j of journals) await j.close();
  for (const d of bareDrivers) await d.close();
  for (const f of files) f.close();
  await Deno.remove(root, { recursive: true });
}
