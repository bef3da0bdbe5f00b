/**
 * The `events` part: append with sequence numbers from 1 per `journal_id`, bounded eviction of the oldest metric
 * events, cumulative acks. Operations run inside the write queue's transaction.
 *
 * @module
 */
import { EVENT_ROW_OVERHEAD, type JournalBounds } from "./bounds.ts";
import { colBytesOrNull, colNum, colStr, type SqlDriver } from "./sql_driver.ts";
import { EVENT_CLASSES, type EventClass, type JournalEvent } from "./types.ts";
import { getMeta, setMeta } from "./meta.ts";
import { all, runSteps, type SqlSteps } from "./sql_steps.ts";

/** Counts and bytes of the unacked backlog by class. */
export type EventTotals = Record<EventClass, { count: number; bytes: number }>;

/**
 * What an allocation event says about its allocation, recorded with the event in one transaction: `bound` for
 * `AllocationBound`, not bound for `AllocationReleased`.
 */
export interface AllocationAnnouncement {
  readonly allocationId: string;
  readonly bound: boolean;
}

/** The result of an append. */
export type AppendOutcome =
  | { readonly appended: true; readonly seq: number; readonly droppedMetrics: number }
  /** A metric event that did not fit even after every older metric event was dropped; it got no sequence. */
  | { readonly appended: false; readonly droppedMetrics: number };

/** Reads the backlog totals. */
export function eventTotals(db: SqlDriver): Promise<EventTotals> {
  return runSteps(db, eventTotalsSteps());
}

/** {@link eventTotals} as steps (`sql_steps.ts`). */
export function* eventTotalsSteps(): SqlSteps<EventTotals> {
  const out: EventTotals = {
    metric: { count: 0, bytes: 0 },
    transition: { count: 0, bytes: 0 },
    result: { count: 0, bytes: 0 },
  };
  for (const r of yield* all("SELECT class, count, bytes FROM event_totals")) {
    const c = colStr(r, "class") as EventClass;
    if (EVENT_CLASSES.includes(c)) out[c] = { count: colNum(r, "count"), bytes: colNum(r, "bytes") };
  }
  return out;
}

function _sum(t: EventTotals): { count: number; bytes: number } {
  return {
    count: t.metric.count + t.transition.count + t.result.count,
    bytes: t.metric.bytes + t.transition.bytes + t.result.bytes,
  };
}

/** Whether transitions and results alone reach a bound: new commands get `BUSY`. */
export function isFull(t: EventTotals, b: JournalBounds): boolean {
  const count = t.transition.count + t.result.count;
  const bytes = t.transition.bytes + t.result.bytes;
  return count >= b.maxUnackedEvents || bytes >= b.maxBytes;
}

/** Appends one event, dropping the oldest metric events first when a bound would be passed. */
export async function appendEvent(
  db: SqlDriver,
  bounds: JournalBounds,
  cls: EventClass,
  payload: Uint8Array,
  now: number,
  announce?: AllocationAnnouncement,
): Promise<AppendOutcome> {
  if (!EVENT_CLASSES.includes(cls)) {
    throw new TypeError(`event class ${JSON.stringify(cls)} is not one of ${EVENT_CLASSES}`);
  }
  if (announce !== undefined && cls === "metric") {
    throw new TypeError("an allocation announcement rides a transition or result event, never a droppable metric");
  }
  const size = payload.byteLength + EVENT_ROW_OVERHEAD;
  if (size > bounds.maxBytes) {
    throw new RangeError(
      `a ${cls} event of ${payload.byteLength} bytes exceeds the journal's ${bounds.maxBytes}-byte bound`,
    );
  }
  const totals = await eventTotals(db);
  let { count, bytes } = _sum(totals);
  let dropped = 0;
  const fits = () => count + 1 <= bounds.maxUnackedEvents && bytes + size <= bounds.maxBytes;
  if (!fits()) {
    const metrics = await db.all("SELECT seq, size FROM events WHERE class = 'metric' ORDER BY seq");
    let dropBytes = 0;
    let upTo = 0;
    for (const m of metrics) {
      if (fits()) break;
      count--;
      bytes -= colNum(m, "size");
      dropBytes += colNum(m, "size");
      upTo = colNum(m, "seq");
      dropped++;
    }
    if (dropped > 0) {
      await db.run("DELETE FROM events WHERE class = 'metric' AND seq <= ?", [upTo]);
      await db.run("UPDATE event_totals SET count = count - ?, bytes = bytes - ? WHERE class = 'metric'", [
        dropped,
        dropBytes,
      ]);
    }
    if (!fits() && cls === "metric") return { appended: false, droppedMetrics: dropped };
  }
  const seq = (await getMeta(db)).eventSeq + 1;
  await setMeta(db, "event_seq", seq);
  await db.run("INSERT INTO events (seq, class, payload, size, created_at) VALUES (?, ?, ?, ?, ?)", [
    seq,
    cls,
    payload,
    size,
    now,
  ]);
  await db.run("UPDATE event_totals SET count = count + 1, bytes = bytes + ? WHERE class = ?", [size, cls]);
  if (announce !== undefined) {
    if (announce.bound) {
      await db.run("INSERT OR REPLACE INTO announced_allocations (allocation_id, event_seq) VALUES (?, ?)", [
        announce.allocationId,
        seq,
      ]);
    } else await db.run("DELETE FROM announced_allocations WHERE allocation_id = ?", [announce.allocationId]);
  }
  return { appended: true, seq, droppedMetrics: dropped };
}

/** Allocation ids whose last journaled allocation event is `AllocationBound`. */
export async function announcedAllocations(db: SqlDriver): Promise<Set<string>> {
  const rows = await db.all("SELECT allocation_id FROM announced_allocations");
  return new Set(rows.map((r) => colStr(r, "allocation_id")));
}

/** Unacked events above `afterSeq`, oldest first, at most `limit`. */
export async function listEvents(db: SqlDriver, afterSeq: number, limit: number): Promise<JournalEvent[]> {
  const rows = await db.all("SELECT seq, class, payload, created_at FROM events WHERE seq > ? ORDER BY seq LIMIT ?", [
    afterSeq,
    limit,
  ]);
  return rows.map((r) => ({
    seq: colNum(r, "seq"),
    class: colStr(r, "class") as EventClass,
    payload: colBytesOrNull(r, "payload") ?? new Uint8Array(),
    createdAt: colNum(r, "created_at"),
  }));
}

/** Deletes every event up to `seq` (a cumulative ack); returns how many were removed. */
export async function ackEventsUpTo(db: SqlDriver, seq: number): Promise<number> {
  const per = await db.all("SELECT class, count(*) AS n, sum(size) AS b FROM events WHERE seq <= ? GROUP BY class", [
    seq,
  ]);
  let n = 0;
  for (const r of per) {
    await db.run("UPDATE event_totals SET count = count - ?, bytes = bytes - ? WHERE class = ?", [
      colNum(r, "n"),
      colNum(r, "b"),
      colStr(r, "class"),
    ]);
    n += colNum(r, "n");
  }
  if (n > 0) await db.run("DELETE FROM events WHERE seq <= ?", [seq]);
  return n;
}
