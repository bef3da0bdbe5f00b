/**
 * A 64-bit integer as two unsigned 32-bit halves, for the writer's 64-bit fields and the generated `fromObject` /
 * `toObject` (`new $util.LongBits(low, high).toNumber(unsigned)`). bcd has no `long.js`: 64-bit values are numbers,
 * and the halves exist only on the way to or from the wire.
 *
 * @module
 */

const _2_32 = 4294967296;

/** The two halves of a 64-bit two's-complement integer. */
export class LongBits {
  /** The low 32 bits, unsigned. */
  lo: number;
  /** The high 32 bits, unsigned. */
  hi: number;

  constructor(lo: number, hi: number) {
    this.lo = lo >>> 0;
    this.hi = hi >>> 0;
  }

  /** The value as a number (rounded beyond 2^53: the reader refuses those before it gets here). */
  toNumber(unsigned?: boolean): number {
    if (!unsigned && this.hi >>> 31) {
      const lo = ~this.lo + 1 >>> 0;
      let hi = ~this.hi >>> 0;
      if (!lo) hi = hi + 1 >>> 0;
      return -(lo + hi * _2_32);
    }
    return this.lo + this.hi * _2_32;
  }

  /**
   * The halves of a number, as protobufjs computes them: the integer part, two's complement when negative; fractions
   * truncate, `NaN` is 0.
   */
  static fromNumber(value: number): LongBits {
    splitNumber(value);
    return new LongBits(SPLIT.lo, SPLIT.hi);
  }

  /**
   * The halves of what an encoder was given for a 64-bit field: a number, a decimal string (read with `parseInt`, as
   * protobufjs without `long.js` reads it), or an object with `low`/`high` halves (a `Long`).
   *
   * @throws {TypeError} for anything else (a `bigint`, say), which protobufjs wrote silently as 0.
   */
  static from(value: unknown): LongBits {
    if (typeof value === "number") return LongBits.fromNumber(value);
    if (typeof value === "string" || value instanceof String) return LongBits.fromNumber(parseInt(String(value), 10));
    if (value !== null && typeof value === "object" && "low" in value && "high" in value) {
      const { low, high } = value as { low: number; high: number };
      return new LongBits(low >>> 0, high >>> 0);
    }
    throw new TypeError(`a 64-bit field takes a number, a decimal string or {low, high}; got ${typeof value}`);
  }
}

/** The halves {@link splitNumber} computed last (module state: the writer splits every 64-bit number with no object). */
export const SPLIT = { lo: 0, hi: 0 };

/**
 * Sets {@link SPLIT} to the halves of a number, as protobufjs computes them: the integer part, two's complement when
 * negative; fractions truncate, `NaN` is 0.
 */
export function splitNumber(value: number): void {
  const sign = value < 0;
  if (sign) value = -value;
  let lo = value >>> 0;
  let hi = (value - lo) / _2_32 >>> 0;
  if (sign) {
    hi = ~hi >>> 0;
    lo = ~lo >>> 0;
    if (++lo > 4294967295) {
      lo = 0;
      if (++hi > 4294967295) hi = 0;
    }
  }
  SPLIT.lo = lo;
  SPLIT.hi = hi;
}
