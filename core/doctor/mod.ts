/**
 * `doctor`: the one command an operator runs on a host that misbehaves (`bcd-node doctor`, `bcd-site doctor`). Each
 * check is one line, `ok`, `warn` or `fail`, with a hint short of `ok`; `--json` prints the same report as one
 * object; the exit status is the worst result's (0, 4, 5).
 *
 * ## Parts
 *
 * - `report.ts`: the report, its text and JSON forms, the exit status.
 * - `agent_checks.ts`: config, identity, trust bundle, the helper and its role, the journal (integrity, lock, bounds),
 *   the clock against the server time mark, the gateway's reachability and TLS.
 * - `host_facts.ts`: what the root helper's `host.doctor` op finds on the host (KVM, huge page sizes, cgroup
 *   controllers, virsh, cloud-hypervisor, nft, sshd, the instance bridges, the data dir's free space) and their lines;
 *   the seed's own words where it has them ("neither virsh nor cloud-hypervisor: this host runs no VPS instances").
 *
 * Judgement calls: a journal lock held is `warn`, not `fail` (a running daemon holds it; doctor cannot tell a healthy
 * daemon from a stray one, so it names the holder); KVM missing is `warn` (domains still run under TCG); a site agent
 * gets no runtime or host-tool lines (it runs no instances).
 *
 * @module
 */
export * from "./report.ts";
export * from "./agent_checks.ts";
export * from "./host_facts.ts";
