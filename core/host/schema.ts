/**
 * Small default-deny schema checks for unit settings: every object names its allowed keys, and an unknown key is
 * refused with the unit and the key's path (`sysctl: unknown key settings.valuez`).
 *
 * @module
 */
import { HostSettingsError, type UnitName } from "./units.ts";

/** Refuses `value` at `path` of `unit`'s settings. */
export function refuse(unit: UnitName, path: string, value: unknown, why: string): never {
  let shown = JSON.stringify(value) ?? String(value);
  if (shown.length > 80) shown = `${shown.slice(0, 77)}...`;
  throw new HostSettingsError("InvalidUnitSettings", unit, `${unit}: ${path} ${shown} ${why}`);
}

/** The object at `path`, holding only `allowed` keys and every `required` one. */
export function object(
  unit: UnitName,
  path: string,
  raw: unknown,
  allowed: readonly string[],
  required: readonly string[] = [],
): Record<string, unknown> {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) refuse(unit, path, raw, "is not an object");
  const o = raw as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) {
      throw new HostSettingsError("InvalidUnitSettings", unit, `${unit}: unknown key ${path}.${k}`);
    }
  }
  for (const k of required) if (o[k] === undefined) refuse(unit, `${path}.${k}`, null, "is missing");
  return o;
}

/** An integer in `[min, max]`. */
export function integer(unit: UnitName, path: string, v: unknown, min: number, max: number): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max) {
    refuse(unit, path, v, `is not an integer from ${min} to ${max}`);
  }
  return v;
}
