/**
 * `bmc.storage` (control lane, destructive, 1 h): volumes of a system's storage controller through Redfish `Storage`
 * (Ironic's Redfish RAID interface is the model).
 *
 * 1. The controller: the system's `Storage` collection member whose `Id` is `controller_id` (case-insensitive), or
 *    the only member when `controller_id` is empty — `storage-controller-missing` otherwise.
 * 2. The operation:
 *    - `CREATE_VOLUME`: each of `drive_ids` must be one of the controller's `Drives` (by the last segment of its
 *      `@odata.id`, or its `Id`) — `storage-drive-missing` otherwise. A POST to the controller's `Volumes` collection
 *      with `Name`, `RAIDType`, the Redfish 1.x `VolumeType` that RAID level maps to (BMCs of the older schema, and
 *      sushy-tools, read only that), `Links.Drives` and `CapacityBytes` (left out for 0, "all of it"). The new volume
 *      is the `Location` of a 201, or the task's result after a 202 followed through its task monitor.
 *    - `DELETE_VOLUME`: `volume_id` must be one of the controller's volumes — `storage-volume-missing` otherwise —
 *      and is DELETEd (a 202 is followed through its task monitor).
 *    - `RESET_CONFIGURATION`: every volume of the controller is DELETEd, one by one, in the collection's order.
 * 3. The result lists the volumes created or deleted, the last task, and a message. A task that ends badly fails
 *    `bmc-error` with its messages (the client's `waitTask`).
 *
 * @module
 */
import type { HandlerContext, HandlerResult, KindHandler } from "../../../core/commands/handlers.ts";
import { payloadOf, resultOf } from "../../../core/commands/kind_payload.ts";
import { CommandFailed, InvalidPayload } from "../../../core/commands/rejection.ts";
import { bcd } from "../../../proto/mod.ts";
import { link, odataId, type RedfishAnswer, type RedfishClient } from "../client.ts";
import { bmcLock, type BmcPorts, checkTarget, openBmc } from "../bmc_target.ts";
import { str } from "./_common.ts";

const Op = bcd.v1.BmcStoragePayload.Operation;

/** Redfish 1.x `VolumeType` of each `RAIDType` (Ironic's mapping). */
export const VOLUME_TYPE: Readonly<Record<string, string>> = {
  RAID0: "NonRedundant",
  RAID1: "Mirrored",
  RAID5: "StripedWithParity",
  RAID6: "StripedWithParity",
  RAID10: "SpannedMirrors",
  RAID50: "SpannedStripesWithParity",
  RAID60: "SpannedStripesWithParity",
};

const MAX_MEMBERS = 256;

/** Options of `bmc.storage`. */
export interface BmcStorageOptions {
  readonly taskWithinMs?: number;
  readonly pollMs?: number;
}

/** The `bmc.storage` handler. */
export function bmcStorageHandler(ports: BmcPorts & { storage?: BmcStorageOptions }): KindHandler {
  return {
    kind: "bmc.storage",
    resources(command) {
      const p = payloadOf("bmc.storage", command);
      _check(p);
      return [bmcLock(checkTarget(p.target))];
    },
    async run(ctx: HandlerContext): Promise<HandlerResult> {
      const p = payloadOf("bmc.storage", ctx.command);
      _check(p);
      const t = checkTarget(p.target);
      const c = await openBmc(ports, t, "bmc.storage", ctx.command.id, ctx.signal);
      const wait = (a: RedfishAnswer) => _followTask(c, a, ports.storage);
      try {
        const system = await c.systemPath(t.systemId);
        const controller = await _controller(c, system, p.controller_id);
        const ctl = (await c.get(controller)).body;
        const volumes = link(ctl, "Volumes", controller);
        if (p.operation === Op.CREATE_VOLUME) {
          const drives = _drives(ctl, controller, p.drive_ids);
          const body: Record<string, unknown> = {
            Name: p.volume_name,
            RAIDType: p.raid_type,
            VolumeType: VOLUME_TYPE[p.raid_type],
            Links: { Drives: drives.map((d) => ({ "@odata.id": d })) },
            ...(p.capacity_bytes > 0 ? { CapacityBytes: p.capacity_bytes } : {}),
          };
          ctx.logger.warn({ bmc: c.origin, controller, name: p.volume_name, raid: p.raid_type }, "creating a volume");
          const created = await c.post(volumes, body);
          const { taskId, answer } = await wait(created);
          const where = created.status === 202 ? answer.location ?? str(answer.body, "@odata.id") : created.location ??
            str(created.body, "@odata.id");
          const id = where ? where.replace(/\/+$/, "").split("/").at(-1)! : str(answer.body, "Id");
          return _result([id], taskId, `volume ${id} (${p.raid_type}) created on ${controller}`);
        }
        const members = (await c.members(volumes)).slice(0, MAX_MEMBERS);
        const targets = p.operation === Op.DELETE_VOLUME ? [_volume(members, p.volume_id, volumes)] : members;
        let taskId = "";
        const gone: string[] = [];
        for (const v of targets) {
          ctx.logger.warn({ bmc: c.origin, volume: v }, "deleting a volume");
          taskId = (await wait(await c.delete(v))).taskId || taskId;
          gone.push(v.split("/").at(-1)!);
        }
        return _result(gone, taskId, `${gone.length} volume(s) deleted on ${controller}`);
      } finally {
        await c.close();
      }
    },
  };
}

function _result(ids: string[], taskId: string, message: string): HandlerResult {
  return { result: resultOf("bmc.storage", { volume_ids: ids, task_id: taskId, message }) };
}

async function _followTask(
  c: RedfishClient,
  a: RedfishAnswer,
  o: BmcStorageOptions | undefined,
): Promise<{ taskId: string; answer: RedfishAnswer }> {
  if (a.status !== 202 || !a.location) return { taskId: "", answer: a };
  const done = await c.waitTask(a.location, { timeoutMs: o?.taskWithinMs ?? 55 * 60_000, pollMs: o?.pollMs ?? 5000 });
  // The monitor's last answer is the task itself, or the operation's own result (the new volume).
  return { taskId: typeof done.body.TaskState === "string" ? str(done.body, "Id") : a.location, answer: done };
}

async function _controller(c: RedfishClient, system: string, id: string): Promise<string> {
  const sys = (await c.get(system)).body;
  if (!sys.Storage) throw new CommandFailed("storage-controller-missing", `${system} has no Storage`);
  const members = (await c.members(link(sys, "Storage", system))).slice(0, MAX_MEMBERS);
  if (id === "") {
    if (members.length === 1) return members[0]!;
    throw new CommandFailed(
      "storage-controller-missing",
      `${system} has ${members.length} storage controllers; controller_id must name one`,
    );
  }
  const found = members.find((m) => m.replace(/\/+$/, "").split("/").at(-1)!.toLowerCase() === id.toLowerCase());
  if (!found) throw new CommandFailed("storage-controller-missing", `${system} has no storage controller ${id}`);
  return found;
}

function _drives(ctl: Record<string, unknown>, controller: string, ids: readonly string[]): string[] {
  const listed = Array.isArray(ctl.Drives)
    ? ctl.Drives.slice(0, MAX_MEMBERS).map((d) => odataId(d, `${controller} Drives`))
    : [];
  return ids.map((id) => {
    const d = listed.find((p) => p.replace(/\/+$/, "").split("/").at(-1)!.toLowerCase() === id.toLowerCase());
    if (!d) throw new CommandFailed("storage-drive-missing", `${controller} has no drive ${id}`);
    return d;
  });
}

function _volume(members: readonly string[], id: string, where: string): string {
  const v = members.find((m) => m.replace(/\/+$/, "").split("/").at(-1)!.toLowerCase() === id.toLowerCase());
  if (!v) throw new CommandFailed("storage-volume-missing", `${where} has no volume ${id}`);
  return v;
}

function _check(p: {
  operation: number;
  controller_id: string;
  volume_name: string;
  raid_type: string;
  drive_ids: string[];
  volume_id: string;
}): void {
  const ident = /^[A-Za-z0-9._:-]{1,128}$/;
  if (p.controller_id !== "" && !ident.test(p.controller_id)) {
    throw new InvalidPayload(`controller_id ${JSON.stringify(p.controller_id.slice(0, 140))}`);
  }
  switch (p.operation) {
    case Op.CREATE_VOLUME:
      if (!/^[\x20-\x7e]{1,64}$/.test(p.volume_name)) {
        throw new InvalidPayload("volume_name: 1 to 64 printable characters");
      }
      if (!(p.raid_type in VOLUME_TYPE)) {
        throw new InvalidPayload(
          `raid_type ${JSON.stringify(p.raid_type)} is not one of ${Object.keys(VOLUME_TYPE).join(", ")}`,
        );
      }
      if (p.drive_ids.length === 0 || p.drive_ids.length > 64 || !p.drive_ids.every((d) => ident.test(d))) {
        throw new InvalidPayload("drive_ids: 1 to 64 drive ids");
      }
      return;
    case Op.DELETE_VOLUME:
      if (!ident.test(p.volume_id)) throw new InvalidPayload(`volume_id ${JSON.stringify(p.volume_id.slice(0, 140))}`);
      return;
    case Op.RESET_CONFIGURATION:
      return;
    default:
      throw new InvalidPayload(`operation ${p.operation} is not CREATE_VOLUME, DELETE_VOLUME or RESET_CONFIGURATION`);
  }
}
