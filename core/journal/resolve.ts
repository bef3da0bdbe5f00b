/**
 * `journal.Resolve`: a delivered command against its journal entry, exactly the six rows of 000 §"Duplicates and
 * crash recovery":
 *
 * | Journal entry                                     | Action                                                  |
 * | ------------------------------------------------- | ------------------------------------------------------- |
 * | none                                              | `execute`: run the acceptance checks, journal accepted  |
 * | `done`                                            | `resend` the stored result                              |
 * | `accepted` or `running` in this process           | `reattach`: the execution in flight reports the result  |
 * | `running`, self-terminating, from an earlier boot | `rebooted`: `SUCCEEDED` with `rebooted`                 |
 * | left by an earlier process, retry-safe            | `reexecute`, after the acceptance checks run again      |
 * | left by an earlier process, not retry-safe        | `interrupted`: `FAILED` with `interrupted`              |
 *
 * "This process" is the incarnation id, fresh at every process start. Rows are tried in order, so a
 * self-terminating kind that is also retry-safe (`node.reboot`) left `running` in the same boot re-executes, and
 * one left `accepted` (its effect never started) re-executes or is interrupted by its retry-safe flag.
 *
 * @module
 */
import type { AcceptedEntry, CommandResult, DoneEntry, JournalEntry, ResolveFlags, RunningEntry } from "./types.ts";

/** The failure code of a command an earlier process left unfinished and that is not retry-safe. */
export const INTERRUPTED = "interrupted";

/** The closed union of what to do with a delivered command. */
export type Resolution =
  | { readonly action: "execute" }
  | { readonly action: "resend"; readonly entry: DoneEntry }
  | { readonly action: "reattach"; readonly entry: AcceptedEntry | RunningEntry }
  | { readonly action: "rebooted"; readonly entry: RunningEntry; readonly result: CommandResult }
  | { readonly action: "reexecute"; readonly entry: AcceptedEntry | RunningEntry }
  | { readonly action: "interrupted"; readonly entry: AcceptedEntry | RunningEntry; readonly result: CommandResult };

/** Where the resolution runs: this process's incarnation and the current boot. */
export interface ResolveContext {
  readonly incarnation: string;
  readonly bootId: string;
}

/**
 * The pure decision of the table; `flags` are the delivered command's kind flags. {@link Journal.resolve} calls
 * this and durably settles the `rebooted` and `interrupted` rows before it returns.
 */
export function resolveEntry(entry: JournalEntry | null, flags: ResolveFlags, ctx: ResolveContext): Resolution {
  if (entry === null) return { action: "execute" };
  if (entry.state === "done") return { action: "resend", entry };
  if (entry.incarnation === ctx.incarnation) return { action: "reattach", entry };
  if (entry.state === "running" && flags.selfTerminating && entry.bootId !== ctx.bootId) {
    return { action: "rebooted", entry, result: rebootedResult(entry, ctx.bootId) };
  }
  if (flags.retrySafe) return { action: "reexecute", entry };
  return { action: "interrupted", entry, result: interruptedResult(ctx.bootId) };
}

/** The result of a self-terminating command whose reboot completed it. */
export function rebootedResult(entry: RunningEntry, bootId: string): CommandResult {
  return { state: "SUCCEEDED", bootId, rebooted: true, previousBootId: entry.bootId };
}

/** The result of a non-retry-safe command an earlier process left unfinished. */
export function interruptedResult(bootId: string): CommandResult {
  return {
    state: "FAILED",
    code: INTERRUPTED,
    message: "an earlier daemon process accepted the command and ended before it finished",
    bootId,
  };
}
