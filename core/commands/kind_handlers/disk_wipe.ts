/**
 * `disk.wipe` (provision lane, ramdisk, attested destructive, six hours): each disk named by its `/dev/disk/by-id`
 * path (every disk of the inventory that has one when none is named) is wiped by root through a {@link DiskWiper}
 * (the helper's `disk.wipe`), one after another; the result lists each disk with the method that held, whether it was
 * verified, its size and the attempts in words. The dispatcher signs it (`node_sig`): the wipe is attested.
 *
 * Payload, as this handler reads it (`DiskWipePayload`), judgement calls written down:
 *
 * - `devices`: `/dev/disk/by-id/<name>` paths, or bare by-id names; only the name goes to the helper, which resolves
 *   it itself. Anything else (`/dev/sda`, `..`) is `invalid-payload` before the command is queued;
 * - `method`: `METHOD_AUTO` runs the ladder (`core/disks/wipe.ts`); `DISCARD` only `blkdiscard`; `ZERO` only the zero
 *   overwrite; `SECURE_ERASE` and `CRYPTO_ERASE` fail `unsupported-method`: no device method of that kind is offered
 *   by bcd's block device yet, and asking for one must not silently get another;
 * - `verify`: bcd always reads back (an unverified wipe is not attested): false samples, true reads every byte;
 * - `random_pass`: the overwrite rung writes one random pass instead of zeros (with `ZERO`: only that pass).
 *
 * Failure: a disk refused by root (its reason: `mounted`, `ramdisk-disk`, `in-use`, `swap`, `unknown-disk`,
 * `not-a-whole-disk`), a wipe whose read-back failed (`verify-failed`) or a cancel (`cancelled`) fails the command
 * with that reason as its code and every disk's state so far in the message; the disks after it are not touched.
 * A cancel reaches root as `disk.wipe_cancel`, which stops the wipe between chunks.
 *
 * @module
 */
import { packResult, unpackPayload, WireDecodeError } from "../../../proto/mod.ts";
import type { DiskWipeAnswer, VerifyMode, WipeAttempt, WipeMethod } from "../../disks/mod.ts";
import { isDiskId } from "../../disks/disk_id.ts";
import type { HandlerContext, HandlerResult, KindHandler } from "../handlers.ts";
import { HOST_LOCK } from "../locks.ts";
import { CommandFailed, InvalidPayload } from "../rejection.ts";
import type { HostInventoryReader } from "./inventory_refresh.ts";

/** Root's wipe of one disk; `signal` aborting asks root to stop between chunks. */
export interface DiskWiper {
  wipe(
    a: { diskId: string; pattern: "zero" | "random"; verify: VerifyMode; only?: WipeMethod },
    signal: AbortSignal,
  ): Promise<DiskWipeAnswer>;
}

const _BY_ID = "/dev/disk/by-id/";

/** `DiskWipePayload.Method` by number. */
const _METHOD = { AUTO: 0, DISCARD: 1, ZERO: 2, SECURE_ERASE: 3, CRYPTO_ERASE: 4 } as const;

/** The `disk.wipe` handler. */
export function diskWipeHandler(ports: { wiper: DiskWiper; inventory: HostInventoryReader }): KindHandler {
  return {
    kind: "disk.wipe",
    resources(command) {
      const p = _payload(command.payload);
      return p.ids.length === 0 ? [HOST_LOCK] : p.ids.map((id) => `disk:${_BY_ID}${id}`);
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const p = _payload(ctx.command.payload);
      const disks = (await ports.inventory.read()).disks ?? [];
      const ids = p.ids.length > 0 ? p.ids : disks.flatMap((d) => (d.by_id ? [d.by_id.slice(_BY_ID.length)] : []));
      if (p.method === _METHOD.SECURE_ERASE || p.method === _METHOD.CRYPTO_ERASE) {
        throw new CommandFailed("unsupported-method", `disk.wipe: method ${p.method} is not offered by any disk yet`);
      }
      const only: WipeMethod | undefined = p.method === _METHOD.DISCARD
        ? "blkdiscard"
        : p.method === _METHOD.ZERO
        ? (p.random ? "overwrite-random" : "overwrite-zero")
        : undefined;
      const outcomes = [];
      for (const diskId of ids) {
        if (ctx.signal.aborted) throw new CommandFailed("cancelled", `disk.wipe: cancelled before ${diskId}`);
        const serial = disks.find((d) => d.by_id === `${_BY_ID}${diskId}`)?.serial ?? "";
        const a = await ports.wiper.wipe(
          {
            diskId,
            pattern: p.random ? "random" : "zero",
            verify: p.verifyAll ? "all" : "sample",
            ...(only ? { only } : {}),
          },
          ctx.signal,
        );
        if (!a.ok) {
          const done = outcomes.map((o) => `${o.device} ${o.message}`).join("; ");
          throw new CommandFailed(
            a.reason,
            `disk.wipe: ${diskId}: ${a.message}${_words(a.attempts)}${done ? ` (wiped before it: ${done})` : ""}`,
          );
        }
        ctx.logger.info({ disk_id: diskId, method: a.outcome.method }, "disk wiped and verified");
        outcomes.push({
          device: `${_BY_ID}${diskId}`,
          serial,
          method: _wireMethod(a.outcome.method),
          wiped: true,
          verified: true,
          size_bytes: a.outcome.sizeBytes,
          message: `${a.outcome.method}, ${a.outcome.verify} read-back of ${a.outcome.verifiedBytes} bytes${
            _words(a.outcome.attempts)
          }`,
        });
      }
      const any = packResult("disk.wipe", { disks: outcomes });
      return { result: { typeUrl: any.type_url, value: any.value } };
    },
  };
}

function _words(attempts: readonly WipeAttempt[]): string {
  const w = attempts.filter((a) => a.outcome !== "verified").map((a) => a.message ?? `${a.method} ${a.outcome}`);
  return w.length > 0 ? ` [${w.join("; ")}]` : "";
}

function _wireMethod(m: WipeMethod): number {
  if (m === "blkdiscard" || m === "blkdiscard-secure") return _METHOD.DISCARD;
  if (m === "overwrite-zero" || m === "overwrite-random") return _METHOD.ZERO;
  return m === "nvme-sanitize" ? _METHOD.CRYPTO_ERASE : _METHOD.SECURE_ERASE;
}

function _payload(p: { typeUrl: string; value: Uint8Array } | undefined) {
  if (p === undefined) return { ids: [] as string[], method: 0, verifyAll: false, random: false };
  let w;
  try {
    w = unpackPayload("disk.wipe", { type_url: p.typeUrl, value: p.value });
  } catch (e) {
    if (e instanceof WireDecodeError) throw new InvalidPayload(e.message, { cause: e });
    throw e;
  }
  const ids: string[] = [];
  for (const d of w.devices ?? []) {
    const id = d.startsWith(_BY_ID) ? d.slice(_BY_ID.length) : d;
    if (!isDiskId(id)) {
      throw new InvalidPayload(
        `disk.wipe: device ${JSON.stringify(d)} is not a /dev/disk/by-id path (disks by stable id only)`,
      );
    }
    if (!ids.includes(id)) ids.push(id);
  }
  return { ids, method: Number(w.method ?? 0), verifyAll: w.verify === true, random: w.random_pass === true };
}
