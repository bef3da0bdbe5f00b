/**
 * `identity.json` beside the journal: the certificate chain and the command-signing trust bundle (written by the
 * PKI and session code; opaque here), plus the mirror of the server time mark, so a lost journal does not reset the
 * mark. Mode 0600, replaced durably (temp file + fsync + rename + fsync of the directory).
 *
 * @module
 */
import { join } from "../util/path.ts";
import { writeFileDurable } from "./durable_file.ts";
import { settled } from "../settled.ts";

/** The file name inside the data directory. */
export const IDENTITY_FILE = "identity.json";

/** The most bytes read from identity.json (certificates and a trust bundle fit well inside). */
export const MAX_IDENTITY_BYTES = 1 << 20;

/** The file's content: `server_time_mark` is the journal's; every other key belongs to its writer. */
export interface Identity {
  /** The mirrored server time mark, ms since the epoch. */
  readonly server_time_mark?: number;
  readonly [key: string]: unknown;
}

/** Thrown when identity.json exists but cannot be used (too large, not a JSON object). */
export class IdentityFileError extends Error {
  override name = "IdentityFileError";
  readonly reason = "identity-invalid";
}

/** Reads `identity.json` in `dataDir`; null when absent. */
export async function readIdentity(dataDir: string): Promise<Identity | null> {
  const path = join(dataDir, IDENTITY_FILE);
  let f: Deno.FsFile;
  try {
    f = await Deno.open(path, { read: true });
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  try {
    const size = (await f.stat()).size;
    if (size > MAX_IDENTITY_BYTES) throw new IdentityFileError(`${path} is ${size} bytes (max ${MAX_IDENTITY_BYTES})`);
    const buf = new Uint8Array(size);
    let n = 0;
    while (n < size) {
      const r = await f.read(buf.subarray(n));
      if (r === null) break;
      n += r;
    }
    let v: unknown;
    try {
      v = JSON.parse(new TextDecoder().decode(buf.subarray(0, n)));
    } catch (e) {
      throw new IdentityFileError(`${path} is not JSON`, { cause: e });
    }
    if (typeof v !== "object" || v === null || Array.isArray(v)) {
      throw new IdentityFileError(`${path} is not an object`);
    }
    return v as Identity;
  } finally {
    f.close();
  }
}

const _chains = new Map<string, Promise<unknown>>();

/**
 * Merges `patch` into identity.json (creating it) and writes it durably with mode 0600; returns the new content.
 * Updates of one data directory within this process are serialized, so the time-mark mirror and a certificate
 * rotation never lose each other's keys.
 */
export function updateIdentity(dataDir: string, patch: Readonly<Record<string, unknown>>): Promise<Identity> {
  const run = async () => {
    const next = { ...(await readIdentity(dataDir) ?? {}), ...patch };
    await writeFileDurable(
      join(dataDir, IDENTITY_FILE),
      new TextEncoder().encode(JSON.stringify(next, null, 2) + "\n"),
    );
    return next;
  };
  const p = (_chains.get(dataDir) ?? Promise.resolve()).then(run, run);
  const tail = settled(p);
  _chains.set(dataDir, tail);
  void tail.then(() => {
    if (_chains.get(dataDir) === tail) _chains.delete(dataDir);
  });
  return p;
}
