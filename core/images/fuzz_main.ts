/**
 * The on-demand fuzzer: `deno task fuzz:images` / `deno task fuzz:bundles` run seeded batches over the real corpus
 * until stopped (or `--iterations N`), printing tallies per batch. A finding (a crash, a hang, an unnamed verdict,
 * an escaping name) is written to a file whose path is printed, with the seed and iteration that reproduce it, and
 * the run exits 1.
 *
 * Usage: deno run -A core/images/fuzz_main.ts images|bundles [--iterations N] [--seed S]
 *
 * @module
 */
import { parseArgs } from "node:util";
import { join } from "node:path";
import { bundleCorpus, fuzzBundles, FuzzFinding, fuzzImages, imageCorpus, type Tally } from "./_fuzz.ts";
import { Tree } from "./tree.ts";

function _print(line: string): void {
  Deno.stdout.writeSync(new TextEncoder().encode(line + "\n"));
}

const { values, positionals } = parseArgs({
  args: Deno.args,
  options: { iterations: { type: "string" }, seed: { type: "string" } },
  allowPositionals: true,
});
const kind = positionals[0];
if (kind !== "images" && kind !== "bundles") {
  _print("usage: fuzz_main.ts images|bundles [--iterations N] [--seed S]");
  Deno.exit(2);
}
const limit = values.iterations === undefined ? Infinity : Number(values.iterations);
let seed = values.seed === undefined ? (Date.now() & 0x7fffffff) : Number(values.seed);
const work = await Deno.makeTempDir({ prefix: `bcd-fuzz-${kind}-` });
const batch = kind === "images" ? 20_000 : 2_000;
const tally: Tally = {};
let done = 0;
_print(`fuzzing ${kind} from seed ${seed}, corpus and findings in ${work}`);
try {
  const corpus = kind === "images" ? await imageCorpus(work) : await bundleCorpus(work);
  const sandbox = join(work, "sandbox");
  await Deno.mkdir(sandbox, { recursive: true });
  const tree = new Tree(join(work, "tree"));
  await tree.ensureRoot();
  while (done < limit) {
    const n = Math.min(batch, limit - done);
    if (kind === "images") fuzzImages(corpus, n, seed, tally);
    else await fuzzBundles(corpus, n, seed, { sandbox, unpackEvery: 10, tree, treeEvery: 25, tally });
    done += n;
    _print(`${done} iterations (last seed ${seed}): ${JSON.stringify(tally)}`);
    seed = (seed + 1) & 0x7fffffff;
  }
  await Deno.remove(work, { recursive: true });
} catch (e) {
  if (!(e instanceof FuzzFinding)) throw e;
  const file = join(work, `finding-${kind}-${seed}.bin`);
  await Deno.writeFile(file, e.input);
  _print(`FINDING: ${e.message}\ninput written to ${file}`);
  Deno.exit(1);
}
