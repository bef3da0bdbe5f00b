/**
 * mulberry32: a small, well-mixed, seeded 32-bit PRNG, so a randomized campaign (crash kills, chaos interleavings,
 * fuzz mutations) that fails can be replayed from its printed seed. Not for anything secret.
 *
 * @module
 */

/** A generator of uniform numbers in [0, 1) from `seed`. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
