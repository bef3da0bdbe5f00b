/**
 * The real {@link Rebooter}: asks the init system to reboot (`systemctl reboot`), falling back to `reboot` where
 * systemctl is absent or refuses (a ramdisk's busybox init, a host without systemd). The command only asks: the
 * process ends when the init system stops it.
 *
 * @module
 */
import type { Rebooter } from "../../core/commands/kind_handlers/mod.ts";

/** Runs one command; the real one is Deno.Command. */
export type CommandRunner = (cmd: string, args: string[]) => Promise<{ success: boolean; detail: string }>;

/** Deno.Command, with a missing or forbidden binary reported as a failure rather than thrown. */
export const denoRunner: CommandRunner = async (cmd, args) => {
  try {
    const out = await new Deno.Command(cmd, { args, stdin: "null", stdout: "null", stderr: "piped" }).output();
    const err = new TextDecoder().decode(out.stderr).trim();
    return { success: out.success, detail: out.success ? "" : `exit ${out.code}${err ? `: ${err}` : ""}` };
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return { success: false, detail: "not installed" };
    if (e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied) {
      return { success: false, detail: `not permitted: ${e.message}` };
    }
    throw e;
  }
};

/** The init-system rebooter. */
export class InitRebooter implements Rebooter {
  constructor(private readonly run: CommandRunner = denoRunner) {}

  /** `systemctl reboot`, else `reboot`; throws with both answers when neither accepts. */
  async reboot(_reason: string): Promise<void> {
    const tries: [string, string[]][] = [["systemctl", ["reboot"]], ["reboot", []]];
    const failures: string[] = [];
    for (const [cmd, args] of tries) {
      const r = await this.run(cmd, args);
      if (r.success) return;
      failures.push(`${[cmd, ...args].join(" ")}: ${r.detail}`);
    }
    throw new Error(`the init system refused to reboot (${failures.join("; ")})`);
  }
}
