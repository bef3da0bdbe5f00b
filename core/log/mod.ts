/**
 * Logging: pino-shaped JSON lines on stderr (`json_logger.ts`), one event per line, with ids (`command_id`,
 * `generation`, `instance`) as fields, never inside the message. Library code takes a {@link Logger} and never
 * writes to the console.
 *
 * @module
 */
import { jsonLogger, type LogDestination, type Logger, stderrDestination } from "./json_logger.ts";

export { type LogDestination, type LogFn, type Logger, stderrDestination } from "./json_logger.ts";

/** The levels `[log] level` and `BCD_LOG_LEVEL` accept. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = typeof LOG_LEVELS[number];

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  level?: LogLevel;
  /** Fields on every line, e.g. `{ role: "node" }`. */
  base?: Record<string, unknown>;
  /** Where lines go: file descriptor 2 (stderr) unless a test passes its own sink. */
  destination?: LogDestination;
}

/** The level from `BCD_LOG_LEVEL` when set and valid, else `fallback`. Reading the env is optional. */
export function levelFromEnv(fallback: LogLevel): LogLevel {
  let v: string | undefined;
  try {
    v = Deno.env.get("BCD_LOG_LEVEL");
  } catch (e) {
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) return fallback;
    throw e;
  }
  return v !== undefined && (LOG_LEVELS as readonly string[]).includes(v) ? v as LogLevel : fallback;
}

/** A logger writing JSON lines to stderr (or `destination`). */
export function createLogger(opts: LoggerOptions = {}): Logger {
  return jsonLogger(opts.destination ?? stderrDestination(), opts.level ?? "info", opts.base ?? {});
}

/** A logger that drops everything, for tests that do not look at logs. */
export function silentLogger(): Logger {
  return jsonLogger({ write() {} }, "silent");
}

/** A logger that keeps its lines in memory, parsed, for tests that assert on logs. */
export function memoryLogger(level: LogLevel = "trace"): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({
    level,
    destination: { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) },
  });
  return { logger, lines };
}
