/**
 * Waiting on a promise that someone else owns. {@link settled} is the one place a rejection is deliberately not
 * handled here, for the two shapes where that is right and a bare `.catch(() => undefined)` would hide the intent:
 *
 * - a queue or lock chains the next job after the previous one, whatever its outcome (`tail = settled(job)`); the job's
 *   rejection still reaches the caller that awaits the job itself;
 * - a promise is created before anyone awaits it (a result an exec reports later), and must not count as an unhandled
 *   rejection meanwhile (`void settled(p)`); whoever awaits `p` later still sees the rejection.
 *
 * Anything else catches the errors it expects by type and lets the rest surface.
 *
 * @module
 */

/** Resolves once `p` has settled, fulfilled or rejected; the rejection stays with whoever awaits `p`. */
export function settled(p: Promise<unknown>): Promise<void> {
  return p.then(() => undefined, () => undefined);
}
