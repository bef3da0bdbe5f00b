/**
 * What the message classes reach through `$util` besides the reader and writer: the helpers of protobufjs'
 * `util/minimal` that `proto/gen/bcd_static.js` and `proto/classes.ts` call, and nothing else (`runtime_test.ts` checks every `$util.X` the module
 * names is here). `Long` is `null`: 64-bit values are numbers, and the generated code takes its number branches.
 *
 * @module
 */

import { base64Decode, base64Encode, base64Length } from "./base64.ts";
import { LongBits } from "./long_bits.ts";

/** The options of the generated `toObject`. */
export interface IConversionOptions {
  /** `String` or `Number` (or `BigInt`) for 64-bit values. */
  // deno-lint-ignore ban-types
  longs?: Function;
  /** `String` for enum names, else their numbers. */
  // deno-lint-ignore ban-types
  enums?: Function;
  /** `String` for base64, `Array` for arrays of byte values, else `Uint8Array`s. */
  // deno-lint-ignore ban-types
  bytes?: Function;
  /** Whether absent fields get their defaults. */
  defaults?: boolean;
  /** Whether absent repeated fields get empty arrays. */
  arrays?: boolean;
  /** Whether absent map fields get empty objects. */
  objects?: boolean;
  /** Whether a oneof's discriminator is written. */
  oneofs?: boolean;
  /** Whether non-finite doubles become strings. */
  json?: boolean;
}

/** A getter of a oneof's discriminator: the name of its member that is set, or undefined. */
function oneOfGetter(fieldNames: readonly string[]): (this: Record<string, unknown>) => string | undefined {
  const members = new Set(fieldNames);
  return function (this: Record<string, unknown>): string | undefined {
    const keys = Object.keys(this);
    for (let i = keys.length - 1; i > -1; --i) {
      const k = keys[i]!;
      if (members.has(k) && this[k] !== undefined && this[k] !== null) return k;
    }
    return undefined;
  };
}

/** A setter of a oneof's discriminator: deletes every other member. */
function oneOfSetter(fieldNames: readonly string[]): (this: Record<string, unknown>, name: string) => void {
  return function (this: Record<string, unknown>, name: string): void {
    for (const f of fieldNames) if (f !== name) delete this[f];
  };
}

/** Makes `key` an own, writable data property of `obj` (so `__proto__` can be a map key), unless it is one. */
function makeProp(obj: object, key: string, enumerable?: boolean): void {
  if (Object.hasOwn(obj, key)) return;
  Object.defineProperty(obj, key, { enumerable: enumerable ?? true, configurable: true, writable: true });
}

/** The generated code's `$util`. */
export const util = {
  /** The global object the generated module reads its built-ins from (`$util.global.Object`, ...). */
  global: globalThis,
  /** No `long.js`: 64-bit values are numbers. */
  Long: null,
  LongBits,
  base64: { length: base64Length, encode: base64Encode, decode: base64Decode },
  /** Shared default of repeated fields (on prototypes): frozen. */
  emptyArray: Object.freeze([]) as readonly never[],
  /** Shared default of map fields (on prototypes): frozen. */
  emptyObject: Object.freeze({}) as Readonly<Record<string, never>>,
  /** How deep messages may nest when encoding, decoding and converting. */
  recursionLimit: 100,
  isObject(value: unknown): boolean {
    return !!value && typeof value === "object";
  },
  makeProp,
  /** A zeroed `Uint8Array` of `size` bytes, or a copy of an array of byte values. */
  newBuffer(sizeOrArray: number | ArrayLike<number>): Uint8Array {
    return typeof sizeOrArray === "number" ? new Uint8Array(sizeOrArray) : new Uint8Array(sizeOrArray);
  },
  oneOfGetter,
  oneOfSetter,
  /** `toJSON`'s options: 64-bit values, enums and bytes as strings. */
  toJSONOptions: { longs: String, enums: String, bytes: String, json: true } as IConversionOptions,
};
