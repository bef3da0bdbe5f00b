/**
 * The CDI name grammar (container-device-interface `pkg/parser`): a kind `vendor/class` whose vendor and class are
 * `[A-Za-z0-9_.-]`, starting with a letter and ending alphanumeric; a device name of `[A-Za-z0-9_.:-]`, starting and
 * ending alphanumeric. A fully qualified name is `vendor/class=name`.
 *
 * @module
 */

const _VENDOR_CLASS = /^[A-Za-z](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?$/;
const _DEVICE = /^[A-Za-z0-9](?:[A-Za-z0-9_.:-]*[A-Za-z0-9])?$/;

/** Whether `kind` is a valid `vendor/class`. */
export function isValidCdiKind(kind: string): boolean {
  const parts = kind.split("/");
  return parts.length === 2 && parts.every((p) => _VENDOR_CLASS.test(p));
}

/** Whether `name` is a valid CDI device name. */
export function isValidCdiDeviceName(name: string): boolean {
  return _DEVICE.test(name);
}

/** Whether `q` is a valid fully qualified `vendor/class=name`. */
export function isValidQualifiedCdiName(q: string): boolean {
  const eq = q.indexOf("=");
  return eq > 0 && isValidCdiKind(q.slice(0, eq)) && isValidCdiDeviceName(q.slice(eq + 1));
}
