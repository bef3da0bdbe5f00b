/**
 * The checks of what the agent itself holds: its config, identity and trust bundle, the helper and the role it
 * serves, the journal (integrity, lock, bounds), the clock against the server time mark, and the gateway. Each takes
 * what was found (gathered by `roles/doctor_run.ts`) and gives one line; none does I/O.
 *
 * @module
 */
import { check, type DoctorCheck } from "./report.ts";
import type { ReleaseState } from "../daemon/ports.ts";

/** How far the clock may be behind the server time mark before a `Welcome` is refused (000 §The journal: 5 min). */
export const WELCOME_BACKWARD_MS = 5 * 60 * 1000;

/** The config line: `path` read (undefined: the defaults), or the loader's error. */
export function configCheck(found: { path?: string; error?: string }): DoctorCheck {
  if (found.error !== undefined) {
    return check(
      "config",
      "fail",
      found.error,
      "fix the key or value named; unknown keys are refused by name (the daemon will not start)",
    );
  }
  return check("config", "ok", found.path !== undefined ? `read ${found.path}` : "no config file: the defaults");
}

/** The identity line. */
export function identityCheck(
  role: string,
  found: { nodeId: string; gatewayUrl: string } | { missing: string } | { error: string },
): DoctorCheck {
  if ("missing" in found) {
    return check(
      "identity",
      "fail",
      `${found.missing} holds no identity: this host has not joined`,
      `run join once with a one-time token: bcd-${role} join --token TOKEN --join-url URL`,
    );
  }
  if ("error" in found) {
    return check(
      "identity",
      "fail",
      found.error,
      "identity.json or node.key is damaged; restore them from a backup or re-join the host under a new node id",
    );
  }
  return check("identity", "ok", `node ${found.nodeId}`);
}

/** The trust bundle line: what it enforces. */
export function trustCheck(
  found: { version: number; commandSigningRoots: number; approverKeys: number } | { error: string },
): DoctorCheck {
  if ("error" in found) {
    return check(
      "trust-bundle",
      "fail",
      `the trust bundle in identity.json cannot be read: ${found.error}`,
      "the next Welcome carries the bundle again; if it stays unreadable, re-join",
    );
  }
  if (found.commandSigningRoots === 0) {
    return check(
      "trust-bundle",
      "warn",
      `version ${found.version}: no command-signing roots, so commands and specs are accepted unsigned`,
      "configure pki.commandSigning on the control plane; the next Welcome brings the roots",
    );
  }
  return check(
    "trust-bundle",
    "ok",
    `version ${found.version}: ${found.commandSigningRoots} command-signing root(s), ${found.approverKeys} approver key(s)`,
  );
}

/** What was found of the helper. */
export type HelperFound =
  | { readonly socket: string; readonly error: string }
  | { readonly socket: string; readonly serves: string; readonly facts: boolean };

/** The helper line: reachable, serving this role; `configRole` is `[helper] role` of the agent's config. */
export function helperCheck(role: string, configRole: string | undefined, found: HelperFound): DoctorCheck {
  if (configRole !== undefined && configRole !== role) {
    return check(
      "helper",
      "fail",
      `[helper] role is "${configRole}", and this is the ${role} role: the agent refuses to start`,
      `set role = "${role}" under [helper] (the helper reads the same file) and restart bcd-helper`,
    );
  }
  if ("error" in found) {
    return check(
      "helper",
      "fail",
      `no helper on ${found.socket}: ${found.error}`,
      `start "bcd-helper serve --socket ${found.socket}" as root first (systemctl start bcd-helper)`,
    );
  }
  if (found.serves !== role) {
    return check(
      "helper",
      "fail",
      `the helper on ${found.socket} serves the ${found.serves} role, and this is the ${role} role`,
      `set role = "${role}" under [helper] in the helper's config and restart it`,
    );
  }
  if (!found.facts) {
    return check(
      "helper",
      "warn",
      `the helper on ${found.socket} answers but not host.doctor (an older bcd-helper)`,
      "upgrade bcd-helper to this agent's version; the host checks are skipped",
    );
  }
  return check("helper", "ok", `serves the ${role} role on ${found.socket}`);
}

/** What was found of the journal. */
export type JournalFound =
  | { readonly dataDir: string; readonly missing: true }
  | { readonly dataDir: string; readonly error: string }
  | {
    readonly dataDir: string;
    /** `PRAGMA quick_check`'s answer: `ok`, or the first problem. */
    readonly integrity: string;
    /** The lock holder's description, `null` when none holds it. */
    readonly lockHolder: string | null;
    readonly usedEvents: number;
    readonly maxEvents: number;
    readonly usedBytes: number;
    readonly maxBytes: number;
  };

/** The journal's lines: integrity, lock, bounds. */
export function journalChecks(found: JournalFound): DoctorCheck[] {
  if ("missing" in found) {
    return [check(
      "journal",
      "warn",
      `${found.dataDir} holds no journal yet`,
      "the daemon creates it on its first run; if it ran before, the journal was removed and the node starts a new one",
    )];
  }
  if ("error" in found) {
    return [check(
      "journal",
      "fail",
      `the journal of ${found.dataDir} cannot be read: ${found.error}`,
      "stop the daemon and move journal.db aside; it starts a new journal (the gateway fails in-flight commands)",
    )];
  }
  const out: DoctorCheck[] = [];
  out.push(
    found.integrity === "ok" ? check("journal", "ok", `${found.dataDir}/journal.db passes quick_check`) : check(
      "journal",
      "fail",
      `${found.dataDir}/journal.db fails quick_check: ${found.integrity}`,
      "stop the daemon: at its next start it quarantines the damaged journal and starts a new one",
    ),
  );
  out.push(
    found.lockHolder === null ? check("journal.lock", "ok", "not held: no daemon runs on this data dir") : check(
      "journal.lock",
      "warn",
      `held by ${found.lockHolder}`,
      "a running daemon holds it; if none should run, stop that process: a second daemon refuses to start",
    ),
  );
  const full = Math.max(found.usedEvents / found.maxEvents, found.usedBytes / found.maxBytes);
  out.push(
    full < 0.8
      ? check(
        "journal.bounds",
        "ok",
        `${found.usedEvents}/${found.maxEvents} unacked events, ${found.usedBytes}/${found.maxBytes} bytes`,
      )
      : check(
        "journal.bounds",
        "warn",
        `${found.usedEvents}/${found.maxEvents} unacked events, ${found.usedBytes}/${found.maxBytes} bytes: ${
          Math.round(full * 100)
        }% full`,
        "the gateway is not acking events; check the session (gateway line); when full, new commands get BUSY",
      ),
  );
  return out;
}

/** The clock against the server time mark (the highest server time this node saw); `mark` 0: none seen yet. */
export function clockCheck(now: number, mark: number): DoctorCheck {
  if (mark === 0) return check("clock", "ok", "no server time seen yet");
  const behind = mark - now;
  if (behind > WELCOME_BACKWARD_MS) {
    return check(
      "clock",
      "fail",
      `this clock is ${Math.round(behind / 1000)} s behind the server time mark ${new Date(mark).toISOString()}`,
      "fix the host's time (NTP); if the mark itself is wrong: bcd-node journal reset-time-mark with the daemon stopped",
    );
  }
  return check("clock", "ok", `within ${Math.max(0, Math.round(behind / 1000))} s of the server time mark`);
}

/** What the gateway probe found. */
export type GatewayFound =
  | { readonly url: undefined }
  | { readonly url: string; readonly ok: true; readonly tls: boolean }
  | { readonly url: string; readonly ok: false; readonly tls: boolean; readonly error: string };

/** The gateway line: reachable, and with TLS a certificate this host trusts. */
export function gatewayCheck(found: GatewayFound): DoctorCheck {
  if (found.url === undefined) {
    return check(
      "gateway",
      "fail",
      "no gateway URL: neither [gateway] url nor identity.json names one",
      "join the host, or set [gateway] url",
    );
  }
  if (!found.ok) {
    const tlsy = found.tls && /certificate|tls|handshake|issuer|expired/i.test(found.error);
    return check(
      "gateway",
      "fail",
      `${found.url}: ${found.error}`,
      tlsy
        ? "the gateway's certificate is not trusted here: set [gateway] ca_file to its CA, or check its name and dates"
        : "check DNS, routes and firewalls to the gateway, and that it runs",
    );
  }
  return check(
    "gateway",
    "ok",
    `${found.url} reached${found.tls ? ", TLS certificate verified" : " (loopback, no TLS)"}`,
  );
}

/** The self-update's line: the release `current` names, a swap awaiting its confirm, the last rollback. */
export function releaseCheck(running: string, found: ReleaseState | { error: string }): DoctorCheck {
  if ("error" in found) {
    return check(
      "release",
      "warn",
      `the helper cannot say which release runs: ${found.error}`,
      "check [daemon] releases_dir in the helper's config; self-update needs it",
    );
  }
  if (found.pending !== null) {
    return check(
      "release",
      "warn",
      `release ${found.pending.version} is swapped in and awaits its confirm until ${
        new Date(found.pending.deadlineMs).toISOString()
      } (before: ${found.pending.previous ?? "none"})`,
      "the new process confirms after its first Welcome; without it the helper rolls back at the deadline",
    );
  }
  if (found.failed !== null) {
    return check(
      "release",
      "warn",
      `release ${found.failed.version} was rolled back: ${found.failed.message}`,
      "the daemon section stays FAILED for that version; publish a fixed release under a new version",
    );
  }
  if (found.current === null) {
    return check("release", "ok", `${running}, not run from a release directory (no current link)`);
  }
  return check(
    "release",
    "ok",
    `${found.current} (previous ${found.previous ?? "none"}); this process runs ${running}`,
  );
}
