/**
 * Every README command line of an agent role (and the helper), parsed by the role's own command table the way
 * `runCli` parses it, gives `node:util` parseArgs' result, and so do its usual mistakes (an unknown flag, a missing or
 * option-like value, a value on a switch, a stray positional): bcd's parser (`core/util/args.ts`, which keeps
 * `node:util` off the agents' start path) accepts the same lines and refuses them with the same messages.
 */
import assert from "node:assert/strict";
import { parseArgs as nodeParseArgs, type ParseArgsConfig } from "node:util";
import { readmeCommands } from "../fixtures/readme_commands.ts";
import { parseArgs } from "../core/util/args.ts";
import { runCli, type Subcommand } from "./_cli.ts";

const README = await Deno.readTextFile(new URL("../README.md", import.meta.url));

async function commandsOf(role: string): Promise<Readonly<Record<string, Subcommand>>> {
  const m = await import(`./${role}.ts`) as { COMMANDS: Record<string, Subcommand> };
  return m.COMMANDS;
}

/** The subcommand `argv` names in `cmds` (as `runCli` walks them) and the arguments after its name. */
function resolve(
  cmds: Readonly<Record<string, Subcommand>>,
  argv: string[],
): { cmd: Subcommand; rest: string[] } | null {
  let rest = argv;
  let level = cmds;
  for (;;) {
    const cmd = rest[0] !== undefined && Object.hasOwn(level, rest[0]) ? level[rest[0]] : undefined;
    if (cmd === undefined) return null;
    rest = rest.slice(1);
    if (cmd.sub && rest[0] !== undefined && Object.hasOwn(cmd.sub, rest[0])) {
      level = cmd.sub;
      continue;
    }
    return cmd.run ? { cmd, rest } : null;
  }
}

function outcome(f: () => { values: object; positionals: string[] }): unknown {
  try {
    const r = f();
    return { values: { ...r.values }, positionals: r.positionals };
  } catch (e) {
    const err = e as Error & { code?: string };
    return { code: err.code, message: err.message };
  }
}

const ROLES = ["node", "sim", "site", "ramdisk", "guest", "helper"];

/** `argv` and its usual mistakes. */
function variants(argv: string[]): string[][] {
  const out = [argv, [...argv, "--bogus"], [...argv, "-q"], [...argv, "stray"], [...argv, "--help=1"], [...argv, "-h"]];
  const lastFlag = argv.findLastIndex((a) => a.startsWith("--") && !a.includes("="));
  if (lastFlag >= 0) {
    out.push(argv.slice(0, lastFlag + 1)); // its value left off
    out.push([...argv.slice(0, lastFlag + 1), "--bogus", ...argv.slice(lastFlag + 1)]); // an option-like value
    out.push([
      ...argv.slice(0, lastFlag),
      `${argv[lastFlag]}=${argv[lastFlag + 1] ?? ""}`,
      ...argv.slice(lastFlag + 2),
    ]);
  }
  return out;
}

Deno.test("the README's role command lines, and their usual mistakes, parse as node:util's parseArgs parses them", async () => {
  let lines = 0;
  let refusals = 0;
  for (const line of readmeCommands(README)) {
    const words = line.split(/\s+/);
    const at = words.indexOf("task");
    const role = at >= 0 ? words[at + 1] : undefined;
    if (role === undefined || !ROLES.includes(role)) continue;
    const r = resolve(await commandsOf(role), words.slice(at + 2));
    assert.ok(r !== null, `${line}: names a subcommand of ${role}`);
    lines++;
    for (const args of variants(r.rest)) {
      const options = { help: { type: "boolean" as const, short: "h" }, ...(r.cmd.options ?? {}) };
      const allowPositionals = r.cmd.positionals ?? false;
      const own = outcome(() => parseArgs({ args, options, allowPositionals, strict: true }));
      const node = outcome(() =>
        nodeParseArgs({ args, options: options as ParseArgsConfig["options"], allowPositionals, strict: true })
      );
      assert.deepEqual(own, node, `${role} ${JSON.stringify(args)} (${line})`);
      if ("code" in (own as object)) refusals++;
    }
  }
  assert.ok(lines >= 20, `the README's role lines were read (${lines})`);
  assert.ok(refusals >= 3 * lines, `the mistakes were refused (${refusals})`);
});

Deno.test("runCli reports a refused command line as a usage error (exit 2) with node:util's first line", async () => {
  const errs: string[] = [];
  const write = Deno.stderr.writeSync;
  Deno.stderr.writeSync = (b: Uint8Array) => (errs.push(new TextDecoder().decode(b)), b.length);
  const cmds = { go: { summary: "x", options: { out: { type: "string" as const } }, run: () => 0 } };
  try {
    assert.equal(await runCli("sim", ["go", "--out", "--nope"], cmds), 2);
    assert.equal(await runCli("sim", ["go", "--what"], cmds), 2);
    assert.equal(await runCli("sim", ["go", "x"], cmds), 2);
    assert.equal(await runCli("sim", ["go", "--out=v"], cmds), 0);
  } finally {
    Deno.stderr.writeSync = write;
  }
  assert.deepEqual(errs, [
    "bcd-sim: go: Option '--out' argument is ambiguous.\n",
    "bcd-sim: go: Unknown option '--what'\n",
    "bcd-sim: go: Unexpected argument 'x'. This command does not take positional arguments\n",
  ]);
});
