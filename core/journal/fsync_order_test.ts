import assert from "node:assert/strict";
import { join } from "node:path";
import { tempDataDir } from "./journal_testing.ts";

async function hasStrace(): Promise<boolean> {
  try {
    return (await new Deno.Command("strace", { args: ["-V"], stdout: "null", stderr: "null" }).output()).success;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

const STRACE = await hasStrace();
if (!STRACE) console.log("fsync_order_test: skipped, strace is not installed (apt-get install strace)");

Deno.test({
  name: "accepted, running and done are each fsynced to the WAL before the call returns, reads cost no fsync (strace)",
  ignore: !STRACE,
  async fn() {
    await using tmp = await tempDataDir();
    const trace = join(tmp.dir, "trace.txt");
    const out = await new Deno.Command("strace", {
      args: [
        "-f",
        "-y",
        "-e",
        "trace=pwrite64,write,fsync,fdatasync",
        "-o",
        trace,
        Deno.execPath(),
        "run",
        `--allow-read=${tmp.dir}`,
        `--allow-write=${tmp.dir}`,
        new URL("./_fsync_child.ts", import.meta.url).pathname,
        join(tmp.dir, "d"),
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const lines = (await Deno.readTextFile(trace)).split("\n");
    let walWrites = 0;
    let walSyncs = 0;
    let dirty = false;
    const marks: string[] = [];
    let readOnly = false;
    for (const l of lines) {
      if (/pwrite64\(\d+<[^>]*journal\.db-wal>/.test(l)) {
        walWrites++;
        dirty = true;
      } else if (/f(data)?sync\(\d+<[^>]*journal\.db-wal>/.test(l)) {
        walSyncs++;
        dirty = false;
      } else {
        const m = /write\(1<[^>]*>, "MARK ([^"\\]*)/.exec(l);
        if (m?.[1] === "read-only") {
          assert.equal(walWrites + walSyncs, 0, "calls that only read wrote or synced the WAL");
          readOnly = true;
        } else if (m) {
          assert.ok(!dirty, `"${m[1]}" returned with WAL writes not yet fsynced`);
          assert.ok(walWrites > 0 && walSyncs > 0, `"${m[1]}" returned before anything reached the WAL`);
          marks.push(m[1]!);
          walWrites = 0;
          walSyncs = 0;
        }
      }
    }
    assert.equal(marks.length, 9, `markers seen: ${marks}`);
    assert.ok(readOnly, "the read-only marker was seen");
  },
});
