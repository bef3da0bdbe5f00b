/**
 * The VM artifacts and the runtime identity (seed 002 §The runtime identity). The artifacts directory (the seed's
 * `NVX_ARTIFACTS_DIR`; here `BCD_VM_ARTIFACTS`) holds the kernel `vmlinuz`, the base initramfs `initrd.img` and their
 * install metadata, `SHA256SUMS` (`HEX  NAME` lines, as `sha256sum` writes them). Each artifact is named by the digest
 * that the metadata records, never by hashing its contents. The VMs boot a copy of the base initramfs with the guest
 * agent appended, so the initramfs's identity names both: `sha256:DIGEST+bcd-guest/BUILD` (the seed's
 * `runtime-adapter-guest/BUILD`, spelled for our guest agent).
 *
 * @module
 */
import { join } from "node:path";

/** The variable naming the artifacts directory. */
export const ARTIFACTS_VAR = "BCD_VM_ARTIFACTS";
export const KERNEL_NAME = "vmlinuz";
export const INITRAMFS_NAME = "initrd.img";
export const SUMS_NAME = "SHA256SUMS";

/** Install metadata that is missing or names no digest for an artifact. */
export class ArtifactsInvalid extends Error {
  override name = "ArtifactsInvalid";
}

/** What a VM of this runtime runs, by digest. */
export interface RuntimeIdentity {
  readonly kernel: string;
  readonly initramfs: string;
}

/** The artifacts of a runtime and their identity. */
export interface Artifacts {
  readonly dir: string;
  readonly kernel: string;
  readonly initramfs: string;
  readonly identity: RuntimeIdentity;
}

/** Parses SHA256SUMS text into name → hex digest; refuses a malformed line. */
export function parseSums(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const [i, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
    if (!m) throw new ArtifactsInvalid(`${SUMS_NAME} line ${i + 1} is not "HEX  NAME": ${JSON.stringify(line)}`);
    out.set(m[2]!, m[1]!);
  }
  return out;
}

/** The artifacts in `dir`, identified for a guest agent of build `guestBuild`. */
export async function loadArtifacts(dir: string, guestBuild: string): Promise<Artifacts> {
  if (!/^[\x21-\x7e]{1,255}$/.test(guestBuild)) {
    throw new RangeError(`guest build ${JSON.stringify(guestBuild)} is not 1 to 255 printable ASCII characters`);
  }
  let text: string;
  try {
    text = await Deno.readTextFile(join(dir, SUMS_NAME));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new ArtifactsInvalid(`no install metadata: ${join(dir, SUMS_NAME)} is missing`, { cause: e });
    }
    throw e;
  }
  const sums = parseSums(text);
  const digest = (name: string) => {
    const d = sums.get(name);
    if (d === undefined) throw new ArtifactsInvalid(`${join(dir, SUMS_NAME)} records no digest for ${name}`);
    return d;
  };
  return {
    dir,
    kernel: join(dir, KERNEL_NAME),
    initramfs: join(dir, INITRAMFS_NAME),
    identity: {
      kernel: `sha256:${digest(KERNEL_NAME)}`,
      initramfs: `sha256:${digest(INITRAMFS_NAME)}+bcd-guest/${guestBuild}`,
    },
  };
}

/** The parts of the identity in which `recorded` differs from `mine`, in a fixed order. */
export function identityDifferences(recorded: RuntimeIdentity, mine: RuntimeIdentity): string[] {
  return (["kernel", "initramfs"] as const).filter((k) => recorded[k] !== mine[k]);
}
