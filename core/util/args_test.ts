import assert from "node:assert/strict";
import { parseArgs as nodeParseArgs, type ParseArgsConfig } from "node:util";
import { ArgsError, type Options, parseArgs } from "./args.ts";

/** Both parsers' answer to one command line: the parse, or the error's code and message. */
function bothParse(
  args: readonly string[],
  options: Options,
  strict: boolean,
  allowPositionals: boolean | undefined,
): { own: unknown; node: unknown } {
  const run = (f: () => { values: object; positionals: string[] }) => {
    try {
      const r = f();
      return { values: { ...r.values }, positionals: r.positionals };
    } catch (e) {
      const err = e as Error & { code?: string };
      return { error: err.code, name: err.name, message: err.message };
    }
  };
  return {
    own: run(() => parseArgs({ args, options, strict, allowPositionals })),
    node: run(() =>
      nodeParseArgs({
        args: [...args],
        options: options as ParseArgsConfig["options"],
        strict,
        allowPositionals,
      })
    ),
  };
}

const OPTS: Options = {
  help: { type: "boolean", short: "h" },
  "data-dir": { type: "string" },
  config: { type: "string", short: "c" },
  offline: { type: "boolean", short: "o" },
  verbose: { type: "boolean", short: "v" },
  tcp: { type: "string", multiple: true },
  flag: { type: "boolean", multiple: true, short: "f" },
};

const TABLE: string[][] = [
  [],
  ["--help"],
  ["-h"],
  ["--data-dir", "/var/lib/bcd"],
  ["--data-dir=/var/lib/bcd"],
  ["--data-dir="],
  ["--data-dir", ""],
  ["--data-dir"],
  ["--data-dir", "--offline"],
  ["--data-dir", "-"],
  ["--data-dir=--offline"],
  ["-c", "x.toml"],
  ["-cx.toml"],
  ["-c", "-x"],
  ["-c"],
  ["-ov"],
  ["-ovc", "x"],
  ["-ovcx"],
  ["-oc"],
  ["-vx"],
  ["-ffv"],
  ["--offline=yes"],
  ["--offline="],
  ["-o=1"],
  ["--unknown"],
  ["--unknown=1"],
  ["-z"],
  ["-zq"],
  ["pos"],
  ["-"],
  ["--"],
  ["--", "--help", "-h", "x"],
  ["a", "--offline", "b"],
  ["--tcp", "a", "--tcp=b", "--tcp", "c"],
  ["--flag", "-f", "--flag"],
  ["--help", "--help"],
  ["--data-dir", "a", "--data-dir", "b"],
  ["---x"],
  ["--=x"],
  ["--__proto__"],
  ["--__proto__=1"],
  ["--constructor"],
  ["--toString"],
  ["-"],
  ["--data-dir", "x", "extra"],
];

Deno.test("parseArgs gives node:util's parseArgs results and errors (code, message) on a table, strict and not, with and without positionals", () => {
  for (const args of TABLE) {
    for (const strict of [true, false]) {
      for (const allowPositionals of [undefined, true, false]) {
        const { own, node } = bothParse(args, OPTS, strict, allowPositionals);
        assert.deepEqual(own, node, `${JSON.stringify(args)} strict=${strict} allowPositionals=${allowPositionals}`);
      }
    }
  }
});

Deno.test("parseArgs agrees with node:util's parseArgs on 5,000 generated command lines", () => {
  let seed = 0x9e3779b9;
  const next = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  const atoms = [
    "--help",
    "-h",
    "--data-dir",
    "--data-dir=x",
    "-c",
    "-cq",
    "-ov",
    "-oc",
    "-of",
    "--offline",
    "--offline=1",
    "--tcp",
    "--tcp=1",
    "-f",
    "--",
    "-",
    "x",
    "-x",
    "--x",
    "--nope=2",
    "",
  ];
  let errors = 0;
  for (let i = 0; i < 5_000; i++) {
    const args = Array.from({ length: Math.floor(next() * 6) }, () => atoms[Math.floor(next() * atoms.length)]!);
    const strict = next() < 0.7;
    const allowPositionals = next() < 0.5;
    const { own, node } = bothParse(args, OPTS, strict, allowPositionals);
    assert.deepEqual(own, node, `${JSON.stringify(args)} strict=${strict} allowPositionals=${allowPositionals}`);
    if ("error" in (own as object)) errors++;
  }
  assert.ok(errors > 250 && errors < 4_750, `both outcomes were exercised (${errors} refusals)`);
});

Deno.test("parseArgs' refusals are ArgsErrors (TypeErrors) with node:util's codes", () => {
  assert.throws(() => parseArgs({ args: ["--nope"], options: OPTS }), (e) => {
    assert.ok(e instanceof ArgsError && e instanceof TypeError);
    assert.equal(e.code, "ERR_PARSE_ARGS_UNKNOWN_OPTION");
    assert.equal(e.message, "Unknown option '--nope'");
    return true;
  });
  assert.throws(
    () => parseArgs({ args: [], options: { x: { type: "string", short: "xy" } } }),
    /short must be a single character/,
  );
});
