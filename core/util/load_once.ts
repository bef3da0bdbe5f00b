/**
 * A value made on first use by an async `make` (typically a dynamic import and a constructor: issue 24's code loaded
 * on first use), shared by every later use; a `make` that fails fails the uses waiting on it and the next use makes
 * it again.
 *
 * @module
 */

/** A function that answers `make()`'s value, made once on first call; a failed make is tried again by the next call. */
export function loadOnce<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => {
    if (made === undefined) {
      const m = made = make();
      // Only forgets the failed attempt; the rejection itself reaches every caller awaiting `m`.
      m.catch(() => {
        if (made === m) made = undefined;
      });
    }
    return made;
  };
}
