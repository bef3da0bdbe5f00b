/**
 * A process's verified identity: its ID and its start time (field 22 of `/proc/PID/stat`, clock ticks since boot),
 * so that a reattach holds the VMM that a launch spawned and never another process that reused its ID.
 *
 * @module
 */

/** A process, by ID and start time. */
export interface ProcessIdentity {
  readonly pid: number;
  readonly startTime: string;
}

/** Parses `/proc/PID/stat`: the state and start time come after the command's closing parenthesis. */
export function parseProcStat(text: string): { state: string; startTime: string } {
  const close = text.lastIndexOf(")");
  if (close < 0) throw new RangeError(`malformed /proc stat line: ${JSON.stringify(text.slice(0, 80))}`);
  // After ") ": state is field 3, so field N is at index N - 3.
  const fields = text.slice(close + 2).trim().split(" ");
  const state = fields[0];
  const startTime = fields[22 - 3];
  if (state === undefined || startTime === undefined || !/^\d+$/.test(startTime)) {
    throw new RangeError(`malformed /proc stat line: ${JSON.stringify(text.slice(0, 80))}`);
  }
  return { state, startTime };
}

/** The identity of the live process `pid`, or null when there is none (or only its zombie). */
export async function identify(pid: number, procDir = "/proc"): Promise<ProcessIdentity | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(`${procDir}/${pid}/stat`);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  const { state, startTime } = parseProcStat(text);
  if (state === "Z" || state === "X") return null;
  return { pid, startTime };
}

/** Whether the process `id` names still runs (same ID, same start time). */
export async function isAlive(id: ProcessIdentity, procDir = "/proc"): Promise<boolean> {
  const now = await identify(id.pid, procDir);
  return now !== null && now.startTime === id.startTime;
}
