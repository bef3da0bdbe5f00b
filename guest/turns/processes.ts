/**
 * The processes `guest turns` runs: one run of the turn command per native turn, or the one wrapped command.
 * Commands are argv split on whitespace and exec'd directly (the minimal guest has no shell). Their stdout is read
 * as lines (bounded); their stderr passes through to the agent's stderr.
 *
 * @module
 */
import type { Logger } from "../../core/log/mod.ts";
import { LineSplitter } from "../../core/turns/mod.ts";

/** The longest workload output line kept whole; longer ones are logged as refused and skipped. */
export const MAX_OUTPUT_LINE_BYTES = 64 * 1024;

/** Splits a command line into argv on whitespace; refuses an empty one with RangeError. */
export function splitArgv(cmd: string): string[] {
  const argv = cmd.trim().split(/\s+/).filter((s) => s.length > 0);
  if (argv.length === 0) throw new RangeError("the command is empty");
  return argv;
}

/** A started process: its stdout lines, then its exit status. */
export interface StartedProcess {
  readonly lines: AsyncIterable<string>;
  /** The exit code; 128 + signal number when killed; 127 when it could not be started. */
  readonly status: Promise<number>;
  kill(): void;
}

/** Starts `argv` with `env` added to the agent's environment. */
export function startProcess(
  argv: readonly string[],
  env: Readonly<Record<string, string>>,
  logger: Logger,
): StartedProcess {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(argv[0]!, {
      args: argv.slice(1),
      env: { ...env },
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
  } catch (e) {
    logger.error({ event: "spawn_failed", cmd: argv[0], err: String(e) }, "cannot start the command");
    return { lines: (async function* () {})(), status: Promise.resolve(127), kill: () => {} };
  }
  const status = child.status.then((s) => (s.signal !== null ? 128 + _signo(s.signal) : s.code));
  return {
    lines: _lines(child.stdout, logger),
    status,
    kill: () => {
      try {
        child.kill("SIGTERM");
      } catch (e) {
        if (!(e instanceof TypeError)) throw e; // already exited
      }
    },
  };
}

function _signo(sig: Deno.Signal): number {
  const table: Partial<Record<Deno.Signal, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
  return table[sig] ?? 0;
}

async function* _lines(stream: ReadableStream<Uint8Array>, logger: Logger): AsyncGenerator<string> {
  const split = new LineSplitter(MAX_OUTPUT_LINE_BYTES);
  for await (const chunk of stream) {
    for (const ev of split.push(chunk)) {
      if ("line" in ev) yield ev.line;
      else logger.warn({ event: "output_line_refused", reason: ev.refused.reason }, "workload output line refused");
    }
  }
  const tail = split.finish();
  if (tail.length > 0) logger.warn({ event: "output_line_refused", reason: "truncated-line" }, "unterminated line");
}
