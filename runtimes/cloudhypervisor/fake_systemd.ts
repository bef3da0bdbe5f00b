/**
 * A fake `systemd-run`/`systemctl` for the VMM units (systemd does not run on these machines): `run` parses the argv
 * `unit.ts` builds, checks its shape (unit name, slice, `--collect`, one `--property=` per property, the VMM's
 * `--api-socket path=`) and starts a {@link FakeVmm} on that socket; `state` is `active` while that VMM lives and
 * `inactive` once it exited (or `failed` when it was killed by `stop` after {@link FakeSystemd.failOnStop}); `stop`
 * kills it, unless the unit was made to survive its stop ({@link FakeSystemd.survivors}), which models a VMM that a
 * broken stop leaves behind.
 *
 * @module
 */
import { type FakeGuest, FakeVmm } from "./fake_vmm.ts";
import type { ChUnits, UnitState } from "./units.ts";
import { UnitToolError } from "./units.ts";

/** One unit the fake started. */
export interface FakeUnit {
  readonly name: string;
  readonly properties: readonly string[];
  readonly command: readonly string[];
  readonly vmm: FakeVmm;
  stopped: boolean;
}

/** The fake. */
export class FakeSystemd implements ChUnits {
  readonly units = new Map<string, FakeUnit>();
  /** Units whose VMM survives `systemctl stop`. */
  readonly survivors = new Set<string>();
  /** How the next VMM's guest behaves. */
  guest: Partial<FakeGuest> = {};
  /** Every call, in order (`run UNIT`, `stop UNIT`, `state UNIT`). */
  readonly calls: string[] = [];
  failOnStop = false;

  async run(args: readonly string[]): Promise<void> {
    const unit = args.find((a) => a.startsWith("--unit="))?.slice("--unit=".length);
    if (!unit || !/^bcd-ch-[A-Za-z0-9][A-Za-z0-9_.-]*\.service$/.test(unit)) {
      throw new UnitToolError(`systemd-run: no valid --unit in ${JSON.stringify(args.slice(0, 3))}`);
    }
    if (!args.includes("--collect") || !args.includes("--slice=bcd-instances.slice")) {
      throw new UnitToolError(`systemd-run ${unit}: not collected in bcd-instances.slice`);
    }
    const sep = args.indexOf("--");
    const command = args.slice(sep + 1);
    const sock = command.at(-1)?.startsWith("path=") ? command.at(-1)!.slice("path=".length) : undefined;
    if (sep < 0 || command[1] !== "--api-socket" || !sock) {
      throw new UnitToolError(`systemd-run ${unit}: the command is not a VMM on an api socket`);
    }
    this.calls.push(`run ${unit}`);
    const live = this.units.get(unit);
    if (live && live.vmm.alive) {
      throw new UnitToolError(`systemd-run: Unit ${unit} was already loaded or has a fragment file.`);
    }
    const properties = args.slice(0, sep).filter((a) => a.startsWith("--property=")).map((a) => a.slice(11));
    const vmm = await FakeVmm.start(sock, this.guest);
    this.units.set(unit, { name: unit, properties, command, vmm, stopped: false });
  }

  stop(unit: string): Promise<void> {
    this.calls.push(`stop ${unit}`);
    const u = this.units.get(unit);
    if (u && !this.survivors.has(unit)) {
      u.stopped = true;
      u.vmm.kill();
    }
    return Promise.resolve();
  }

  state(unit: string): Promise<UnitState> {
    this.calls.push(`state ${unit}`);
    const u = this.units.get(unit);
    if (!u || !u.vmm.alive) return Promise.resolve(u?.stopped && this.failOnStop ? "failed" : "inactive");
    return Promise.resolve("active");
  }

  /** Ends every VMM (test cleanup). */
  killAll(): void {
    for (const u of this.units.values()) u.vmm.kill();
  }
}
