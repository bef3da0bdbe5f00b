/**
 * The `access` section's converger (000 §Break-glass SSH and tunnel keys): sshd's files through an
 * {@link AccessHost} (the root helper on a node) and the exec-ticket JWKS into a {@link JwksHolder}.
 *
 * - `plan` checks the section again ({@link checkAccessSection}); one that slipped past intake fails terminally
 *   (`AccessSpecInvalid`), and so does a revoked serial 0, which no KRL can hold (`InvalidRevokedSerial`).
 * - The JWKS is taken on every pass, even when no file changes: every plan carries a `jwks` action.
 * - The files are rewritten only when what the helper observes differs from what the section renders
 *   (`accessFilesMatch`); the helper writes each file atomically, checks the drop-in with `sshd -t` first and
 *   reloads sshd only when the drop-in changed. An empty or absent section removes all of it.
 * - A failed apply (a refused drop-in, a failing `ssh-keygen`, an unreachable helper) is retryable; the old files
 *   stay. A JWKS that does not parse fails the section terminally (`JwksInvalid`) after the files are applied, and
 *   the holder holds no key until a valid one comes.
 *
 * @module
 */
import type { ApplyContext, ApplyOutcome, SectionConverger } from "../converge/engine.ts";
import { TerminalSectionError } from "../converge/engine.ts";
import { type AccessFiles, accessFilesMatch, accessFilesOf, type AccessObserved } from "./files.ts";
import { JwksHolder, JwksInvalid } from "./jwks.ts";
import type { AccessHost } from "./ports.ts";
import { type AccessSectionInput, AccessSpecInvalid, checkAccessSection } from "./section.ts";

/** What the converger does in a pass. */
export type AccessAction =
  | { readonly kind: "files"; readonly files: AccessFiles; readonly skipped: number }
  | { readonly kind: "jwks"; readonly text: string };

/** Options of {@link AccessConverger}. */
export interface AccessConvergerOptions {
  readonly host: AccessHost;
  readonly nodeId: string;
  /** Where tunnels look keys up; one is made when absent. */
  readonly jwks?: JwksHolder;
}

/** The converger. */
export class AccessConverger implements SectionConverger<AccessSectionInput, AccessObserved, AccessAction> {
  readonly section = "access" as const;
  readonly jwks: JwksHolder;
  readonly #host: AccessHost;
  readonly #nodeId: string;

  constructor(o: AccessConvergerOptions) {
    this.#host = o.host;
    this.#nodeId = o.nodeId;
    this.jwks = o.jwks ?? new JwksHolder();
  }

  observe(_ctx: ApplyContext): Promise<AccessObserved> {
    return this.#host.observe();
  }

  plan(desired: AccessSectionInput | undefined, observed: AccessObserved): readonly AccessAction[] {
    try {
      checkAccessSection(desired);
    } catch (e) {
      if (e instanceof AccessSpecInvalid) throw new TerminalSectionError("AccessSpecInvalid", e.message, { cause: e });
      throw e;
    }
    if ((desired?.revoked_serials ?? []).some((s) => s < 1)) {
      throw new TerminalSectionError("InvalidRevokedSerial", "access.revoked_serials: serial 0 cannot be revoked");
    }
    const { files, skipped } = accessFilesOf(desired ?? undefined, this.#nodeId);
    const actions: AccessAction[] = [{ kind: "jwks", text: desired?.exec_ticket_jwks ?? "" }];
    if (!accessFilesMatch(files, observed)) actions.unshift({ kind: "files", files, skipped });
    return actions;
  }

  async apply(
    actions: readonly AccessAction[],
    _desired: AccessSectionInput | undefined,
    ctx: ApplyContext,
  ): Promise<ApplyOutcome> {
    for (const a of actions) {
      if (a.kind === "files") {
        const r = await this.#host.apply(a.files);
        ctx.log.info(
          {
            written: r.written,
            removed: r.removed,
            reloaded: r.reloaded,
            ca_keys: a.files.caKeys.length,
            accounts: a.files.principals.length,
            revoked: a.files.revokedSerials.length,
            principals_not_this_node: a.skipped,
          },
          "access: sshd files converged",
        );
      } else {
        try {
          await this.jwks.take(a.text);
        } catch (e) {
          if (e instanceof JwksInvalid) {
            throw new TerminalSectionError("JwksInvalid", `access.exec_ticket_jwks: ${e.message}`, { cause: e });
          }
          throw e;
        }
      }
    }
    return { kind: "converged" };
  }
}
