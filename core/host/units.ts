/**
 * The `host` section's config units (000 §NodeSpec, the `host` row): each a unit name and its settings as canonical
 * JSON, converged in a fixed order, a unit after the units it depends on.
 *
 * Judgement calls the seed leaves open (its host-configuration page is not among the seeds), written down here:
 * - The order is the seed's list: kernel modules → sysctl → huge pages → driver → Fabric Manager → MIG layout → GPU
 *   sharing → container toolkit → Kubernetes join. {@link UNIT_DEPENDS} says which unit needs which: a failed unit
 *   stops exactly the units that (transitively) depend on it; the others still run.
 * - `settings_json` must parse as a JSON object of at most {@link MAX_SETTINGS_BYTES} bytes. It is compared in its
 *   canonical form (sorted keys), so a control plane that spells it with other whitespace or key order changes nothing.
 * - A section that names an unknown unit, a unit twice, or settings its schema refuses is `FAILED` as a whole before
 *   anything is applied: bad input loses nothing.
 *
 * @module
 */

/** The units, in the order they converge. */
export const UNIT_ORDER = [
  "kernel-modules",
  "sysctl",
  "hugepages",
  "nvidia-driver",
  "fabric-manager",
  "mig-layout",
  "gpu-sharing",
  "container-toolkit",
  "kubernetes-join",
] as const;

/** A unit name. */
export type UnitName = typeof UNIT_ORDER[number];

/** The units each unit needs converged first (direct dependencies; the stop rule follows them transitively). */
export const UNIT_DEPENDS: Readonly<Record<UnitName, readonly UnitName[]>> = {
  "kernel-modules": [],
  sysctl: [],
  hugepages: [],
  "nvidia-driver": ["kernel-modules"],
  "fabric-manager": ["nvidia-driver"],
  "mig-layout": ["nvidia-driver"],
  "gpu-sharing": ["nvidia-driver", "mig-layout"],
  "container-toolkit": ["nvidia-driver"],
  "kubernetes-join": ["kernel-modules", "sysctl", "container-toolkit"],
};

/** The largest `settings_json` a unit may carry. */
export const MAX_SETTINGS_BYTES = 64 * 1024;
/** The most units a section may list (each name once). */
export const MAX_UNITS = UNIT_ORDER.length;

/** Whether `s` names a unit. */
export function isUnitName(s: string): s is UnitName {
  return (UNIT_ORDER as readonly string[]).includes(s);
}

/** A section or unit settings the converger refuses; terminal at this generation. */
export class HostSettingsError extends Error {
  override name = "HostSettingsError";
  /** `reason` is the section status reason (`InvalidUnitSettings`, `UnknownUnit`, `DuplicateUnit`). */
  constructor(readonly reason: string, readonly unit: string, message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** One unit of the section, its settings parsed (not yet checked against the unit's schema). */
export interface RawUnit {
  readonly name: UnitName;
  readonly settings: Record<string, unknown>;
}

/** The wire's `HostSection` as protobufjs decodes it. */
interface _WireHost {
  units?: readonly { name?: string | null; settings_json?: string | null }[] | null;
}

/** `value` with object keys sorted, recursively: what canonical JSON serialises. */
export function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value === "object" && value !== null) {
    const o = value as Record<string, unknown>;
    return Object.fromEntries(Object.keys(o).sort().map((k) => [k, canonical(o[k])]));
  }
  return value;
}

/**
 * The section's units by name, each a JSON object. Refuses (throws {@link HostSettingsError}) an unknown unit, a unit
 * named twice, settings that are not a JSON object or are larger than {@link MAX_SETTINGS_BYTES}.
 */
export function parseHostSection(section: unknown): Map<UnitName, RawUnit> {
  const out = new Map<UnitName, RawUnit>();
  const units = (section as _WireHost | undefined | null)?.units ?? [];
  for (const u of units) {
    const name = u.name ?? "";
    if (!isUnitName(name)) {
      throw new HostSettingsError(
        "UnknownUnit",
        name,
        `host unit ${JSON.stringify(name)} is not one of ${UNIT_ORDER.join(", ")}`,
      );
    }
    if (out.has(name)) throw new HostSettingsError("DuplicateUnit", name, `host unit ${name} is listed twice`);
    const text = u.settings_json ?? "";
    if (text.length > MAX_SETTINGS_BYTES) {
      throw new HostSettingsError(
        "InvalidUnitSettings",
        name,
        `${name}: settings are ${text.length} bytes, more than ${MAX_SETTINGS_BYTES}`,
      );
    }
    let parsed: unknown = {};
    if (text !== "") {
      try {
        parsed = JSON.parse(text);
      } catch (e) {
        if (!(e instanceof SyntaxError)) throw e;
        throw new HostSettingsError("InvalidUnitSettings", name, `${name}: settings are not JSON: ${e.message}`, {
          cause: e,
        });
      }
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      throw new HostSettingsError("InvalidUnitSettings", name, `${name}: settings are not a JSON object`);
    }
    out.set(name, { name, settings: canonical(parsed) as Record<string, unknown> });
  }
  return out;
}

/** The units that cannot run because `failed` did not converge: its dependents, transitively, in unit order. */
export function dependentsOf(failed: UnitName): UnitName[] {
  const stopped = new Set<UnitName>([failed]);
  for (const u of UNIT_ORDER) {
    if (UNIT_DEPENDS[u].some((d) => stopped.has(d))) stopped.add(u);
  }
  stopped.delete(failed);
  return UNIT_ORDER.filter((u) => stopped.has(u));
}
