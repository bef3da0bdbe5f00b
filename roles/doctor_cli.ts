/**
 * `bcd-node doctor` and `bcd-site doctor`: the checks of `core/doctor` on this host, one line each (`ok`, `warn`,
 * `fail`, with a hint short of `ok`), or one JSON object with `--json`; exit 0 when all are ok, 4 when the worst is a
 * warning, 5 when one failed. Run with the agent's own permissions: what only root sees (KVM, huge pages, cgroup
 * controllers, host tools, free space) comes from the helper's `host.doctor` op, so with the helper down those lines
 * are missing and the helper line fails. The journal is read through a read-only connection (beside a running daemon
 * too); the gateway gets a TCP connection and, for `wss:`, a TLS handshake, and nothing else.
 *
 * @module
 */
import type { Subcommand } from "./_cli.ts";

/** The `doctor` subcommand of `role` (`node` or `site`). */
export function doctorCommand(role: "node" | "site", defaultDataDir: string): Subcommand {
  return {
    summary: "check this host (config, identity, helper, journal, clock, gateway" +
      (role === "node" ? ", runtimes and host tools" : "") + "); --json; exit 0 ok, 4 warn, 5 fail",
    options: {
      "data-dir": { type: "string" },
      config: { type: "string" },
      gateway: { type: "string" },
      json: { type: "boolean" },
    },
    async run({ values }) {
      const { runDoctor } = await import("./doctor_run.ts");
      return await runDoctor(role, defaultDataDir, values);
    },
  };
}
