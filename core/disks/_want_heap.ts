/**
 * The qcow2 converter's outstanding byte ranges, a binary min-heap on the next byte each still needs (private to
 * `qcow2_stream.ts`).
 *
 * @module
 */

/** A byte range of the image asked for, filled as the stream passes it. */
export interface Want {
  readonly start: number;
  readonly end: number;
  /** The next byte it still needs. */
  next: number;
  buf: Uint8Array | undefined;
  readonly table: boolean;
  readonly done: (bytes: Uint8Array) => Promise<void>;
}

/** Adds `w`. */
export function pushWant(heap: Want[], w: Want): void {
  heap.push(w);
  let i = heap.length - 1;
  while (i > 0) {
    const p = (i - 1) >> 1;
    if (heap[p]!.next <= w.next) break;
    heap[i] = heap[p]!;
    i = p;
  }
  heap[i] = w;
}

/** Removes and returns the want whose next byte comes first. */
export function popWant(heap: Want[]): Want | undefined {
  const top = heap[0];
  const last = heap.pop();
  if (top === undefined || last === undefined || heap.length === 0) return top;
  let i = 0;
  for (;;) {
    const l = 2 * i + 1;
    if (l >= heap.length) break;
    const r = l + 1;
    const c = r < heap.length && heap[r]!.next < heap[l]!.next ? r : l;
    if (heap[c]!.next >= last.next) break;
    heap[i] = heap[c]!;
    i = c;
  }
  heap[i] = last;
  return top;
}

/** Whether `ranges` together cover `[from, to)`. */
export function coversRange(ranges: [number, number][], from: number, to: number): boolean {
  ranges.sort((a, b) => a[0] - b[0]);
  let at = from;
  for (const [lo, hi] of ranges) {
    if (lo > at) return false;
    at = Math.max(at, hi);
  }
  return at >= to;
}
