/**
 * `bmc.rotate` (control lane, attested, destructive, 5 min): replaces a BMC account's password.
 *
 * 1. The current credentials (`target.credential_ref`) and the new password (`new_credential_ref`, a secret for the
 *    payload's `username`) come through the SecretRequest broker, both bound to the command.
 * 2. The account whose `UserName` is the payload's is found in `AccountService.Accounts` (`bmc-account-missing`).
 * 3. Its `Password` is PATCHed with the account's ETag in `If-Match`, logged in with the current credentials.
 * 4. A new client logs in with the new password (a session, or basic auth where the BMC has none): only then does
 *    the command succeed, so the control plane forgets the old secret only once the new one is proven. A login that
 *    fails fails `bmc-rotate-unproven` (the PATCH was sent: the old password may already be gone; the message says so).
 *
 * The result (`username`, the reference now in effect, `rotated`) never holds a secret, and no log line does: the
 * handler logs the account path and the references only. The dispatcher signs the result (attested).
 *
 * @module
 */
import type { HandlerContext, HandlerResult, KindHandler } from "../../../core/commands/handlers.ts";
import { CommandFailed, InvalidPayload } from "../../../core/commands/rejection.ts";
import { link } from "../client.ts";
import { bmcLock, type BmcPorts, checkTarget, fetchCredential, openBmc } from "../bmc_target.ts";
import { RedfishError } from "../errors.ts";
import { str } from "./_common.ts";
import { payloadOf, resultOf } from "../../../core/commands/kind_payload.ts";

const MAX_ACCOUNTS = 64;

/** The `bmc.rotate` handler. */
export function bmcRotateHandler(ports: BmcPorts): KindHandler {
  return {
    kind: "bmc.rotate",
    resources(command) {
      const p = payloadOf("bmc.rotate", command);
      return [bmcLock(_check(p))];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const p = payloadOf("bmc.rotate", ctx.command);
      const t = checkTarget(p.target);
      _check(p);
      const id = ctx.command.id;
      const next = await fetchCredential(ports.secrets, p.new_credential_ref, id, p.username);
      const c = await openBmc(ports, t, "bmc.rotate", id, ctx.signal);
      let patched = false;
      try {
        const root = await c.get("/redfish/v1/");
        const accounts = link(
          (await c.get(link(root.body, "AccountService", "/redfish/v1/"))).body,
          "Accounts",
          "AccountService",
        );
        let account: string | undefined;
        let etag: string | undefined;
        for (const m of (await c.members(accounts)).slice(0, MAX_ACCOUNTS)) {
          const a = await c.get(m);
          if (str(a.body, "UserName") === p.username) {
            account = m;
            etag = a.etag;
            break;
          }
        }
        if (!account) throw new CommandFailed("bmc-account-missing", `${accounts} has no account ${p.username}`);
        ctx.logger.info({ bmc: c.origin, account, new_credential_ref: p.new_credential_ref }, "bmc password rotating");
        await c.patch(account, { Password: next.password }, etag);
        patched = true;
      } finally {
        await c.close();
      }
      const proof = await openBmc(ports, t, "bmc.rotate", id, ctx.signal, next);
      try {
        await proof.login();
      } catch (e) {
        if (!(e instanceof RedfishError)) throw e;
        throw new CommandFailed(
          "bmc-rotate-unproven",
          `the new password was set${
            patched ? "" : " (perhaps)"
          } but logging in with it failed (${e.code}: ${e.message}); ` +
            `the old password may no longer work — keep both references`,
          { cause: e },
        );
      } finally {
        await proof.close();
      }
      ctx.logger.info(
        { bmc: t.host, username: p.username, credential_ref: p.new_credential_ref },
        "bmc password rotated",
      );
      return {
        result: resultOf("bmc.rotate", { username: p.username, credential_ref: p.new_credential_ref, rotated: true }),
      };
    },
  };
}

function _check(p: { target?: unknown; username: string; new_credential_ref: string }) {
  const t = checkTarget(p.target as Parameters<typeof checkTarget>[0]);
  if (p.username === "") throw new InvalidPayload("username is empty");
  if (p.new_credential_ref === "") throw new InvalidPayload("new_credential_ref is empty");
  if (p.new_credential_ref === t.credentialRef) {
    throw new InvalidPayload("new_credential_ref is the current target.credential_ref");
  }
  return t;
}
