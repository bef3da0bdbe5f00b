/**
 * The quorum's durable memory in `data_dir/quorum.json`: which batch leaves already ran (each runs at most once) and
 * which unbatched destructive commands were admitted in the last rolling hour of the host's own clock, so a restart
 * resets neither. Every change is written to a temporary file, fsynced, renamed over the old one and the directory
 * fsynced before the method returns.
 *
 * A leaf or an hourly slot is tied to the command id that took it: the same command re-running its acceptance checks
 * (a redelivery of a retry-safe command a crash interrupted) passes again and counts once.
 *
 * @module
 */
import { type BatchAdmission, QuorumError } from "./quorum.ts";

/** The file name under data_dir. */
export const QUORUM_LEDGER_FILE = "quorum.json";
const HOUR_MS = 3_600_000;
/** Bounds on what the ledger keeps; beyond them the oldest entries go (leaves past their scope first). */
export const MAX_LEDGER_LEAVES = 100_000;
const MAX_FILE_BYTES = 32 * 1024 * 1024;

interface LeafEntry {
  batch_id: string;
  leaf: string;
  command_id: string;
  scope_not_after: number;
}
interface UnbatchedEntry {
  at: number;
  command_id: string;
}

/** A ledger file that cannot be read: the quorum fails closed. */
export class QuorumLedgerError extends Error {
  override name = "QuorumLedgerError";
}

/** What a check decided, to be recorded with {@link QuorumLedger.record} once the command is accepted. */
export type QuorumTicket =
  | { readonly type: "leaf"; readonly commandId: string; readonly admission: BatchAdmission }
  | { readonly type: "unbatched"; readonly commandId: string; readonly limit: number };

/** The persisted leaves and hourly counter. */
export class QuorumLedger {
  private constructor(
    private readonly path: string,
    private leaves: LeafEntry[],
    private unbatched: UnbatchedEntry[],
    private readonly hostNow: () => number,
  ) {}

  /** Opens (or starts) the ledger in `dataDir`. `hostNow` is the host's wall clock (injected in tests). */
  static async open(dataDir: string, hostNow: () => number = Date.now): Promise<QuorumLedger> {
    const path = `${dataDir}/${QUORUM_LEDGER_FILE}`;
    let text: string;
    try {
      const st = await Deno.stat(path);
      if (st.size > MAX_FILE_BYTES) {
        throw new QuorumLedgerError(`${path}: ${st.size} bytes, more than ${MAX_FILE_BYTES}`);
      }
      text = await Deno.readTextFile(path);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return new QuorumLedger(path, [], [], hostNow);
      throw e;
    }
    let o: { v?: unknown; leaves?: unknown; unbatched?: unknown };
    try {
      o = JSON.parse(text);
    } catch (e) {
      throw new QuorumLedgerError(`${path}: not JSON`, { cause: e });
    }
    if (o.v !== 1 || !Array.isArray(o.leaves) || !Array.isArray(o.unbatched)) {
      throw new QuorumLedgerError(`${path}: not a version 1 quorum ledger`);
    }
    return new QuorumLedger(path, o.leaves as LeafEntry[], o.unbatched as UnbatchedEntry[], hostNow);
  }

  /** Throws `BATCH_UNAPPROVED` when the leaf already ran for another command. */
  checkLeaf(commandId: string, admission: BatchAdmission): QuorumTicket {
    const prior = this.leaves.find((l) => l.batch_id === admission.batchId && l.leaf === admission.leaf);
    if (prior !== undefined && prior.command_id !== commandId) {
      throw new QuorumError(
        "BATCH_UNAPPROVED",
        `batch ${JSON.stringify(admission.batchId)}: leaf ${admission.leaf} already ran as command ${prior.command_id}`,
      );
    }
    return { type: "leaf", commandId, admission };
  }

  /** Throws `UNBATCHED_LIMIT` when `limit` unbatched destructive commands were admitted in the last rolling hour. */
  checkUnbatched(commandId: string, limit: number): QuorumTicket {
    if (this.unbatched.some((u) => u.command_id === commandId)) return { type: "unbatched", commandId, limit };
    const n = this.countLastHour();
    if (n >= limit) {
      throw new QuorumError(
        "UNBATCHED_LIMIT",
        `${n} unbatched destructive commands in the last hour; unbatched_destructive_per_hour is ${limit}`,
      );
    }
    return { type: "unbatched", commandId, limit };
  }

  /** The unbatched destructive commands admitted within the last hour of the host clock. */
  countLastHour(): number {
    const since = this.hostNow() - HOUR_MS;
    return this.unbatched.filter((u) => u.at > since).length;
  }

  /**
   * Records an admission durably (the leaf ran, or one more unbatched command this hour). The check is repeated
   * synchronously first, so two commands checked concurrently cannot both take the last slot or the same leaf: the
   * loser gets the {@link QuorumError} here.
   */
  async record(ticket: QuorumTicket, serverNowMs: number): Promise<void> {
    const now = this.hostNow();
    if (ticket.type === "leaf") {
      const a = ticket.admission;
      this.checkLeaf(ticket.commandId, a);
      if (this.leaves.some((l) => l.batch_id === a.batchId && l.leaf === a.leaf)) return;
      this.leaves = this.leaves.filter((l) => l.scope_not_after + HOUR_MS >= serverNowMs);
      this.leaves.push({
        batch_id: a.batchId,
        leaf: a.leaf,
        command_id: ticket.commandId,
        scope_not_after: a.scopeNotAfter,
      });
      if (this.leaves.length > MAX_LEDGER_LEAVES) this.leaves = this.leaves.slice(-MAX_LEDGER_LEAVES);
    } else {
      this.checkUnbatched(ticket.commandId, ticket.limit);
      if (this.unbatched.some((u) => u.command_id === ticket.commandId)) return;
      this.unbatched = this.unbatched.filter((u) => u.at > now - HOUR_MS);
      this.unbatched.push({ at: now, command_id: ticket.commandId });
    }
    await this._persist();
  }

  private async _persist(): Promise<void> {
    const data = new TextEncoder().encode(JSON.stringify({ v: 1, leaves: this.leaves, unbatched: this.unbatched }));
    await writeFileDurable(this.path, data);
  }
}

/** Writes `data` to `path` atomically and durably: temp file, fsync, rename, fsync of the directory. */
export async function writeFileDurable(path: string, data: Uint8Array): Promise<void> {
  const tmp = `${path}.tmp`;
  const f = await Deno.open(tmp, { write: true, create: true, truncate: true, mode: 0o600 });
  try {
    let off = 0;
    while (off < data.length) off += await f.write(data.subarray(off));
    await f.sync();
  } finally {
    f.close();
  }
  await Deno.rename(tmp, path);
  const dir = path.slice(0, Math.max(1, path.lastIndexOf("/")));
  const d = await Deno.open(dir, { read: true });
  try {
    await d.sync();
  } finally {
    d.close();
  }
}
